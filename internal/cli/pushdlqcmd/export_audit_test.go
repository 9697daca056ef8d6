package pushdlqcmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// export runs pushdlq export of the world's DLQ.
func (w *auditWorld) export(extra ...string) (code int, stdout, stderr string) {
	w.t.Helper()
	return w.verb(append([]string{"export"}, extra...)...)
}

// export --delete leaves a record with one deleted item per message (its
// notification id, the file it went to) and the summary's counts; an
// export without --delete changes nothing and leaves none; with an audit
// location that cannot be written nothing is deleted and the file keeps
// what was read.
func TestExportDeleteLeavesARecordOfEachMessageDeleted(t *testing.T) {
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL_S3": testsupport.S3Endpoint(t)})
	w := newAuditWorld(t, 7)
	dir := t.TempDir()
	if code, _, stderr := w.export("--out", filepath.Join(dir, "plain.ndjson")); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	if runs := w.localRuns(); len(runs) != 0 {
		t.Errorf("an export without --delete left %d records", len(runs))
	}
	code, _, stderr := w.export("--out", filepath.Join(dir, "refused.ndjson"), "--delete", "--yes", "--audit", "s3://no-such-bucket-y/a")
	if code != 1 || !strings.Contains(stderr, "the audit record cannot be written to s3://no-such-bucket-y/a/") {
		t.Errorf("unwritable audit: exit %d\n%s", code, stderr)
	}
	if visible, inFlight := queueCount(t, w.c, w.dlq); visible != 7 || inFlight != 0 {
		t.Fatalf("the DLQ holds %d visible and %d in flight after a refused export --delete, want 7 visible", visible, inFlight)
	}
	file := filepath.Join(dir, "deleted.ndjson")
	code, _, stderr = w.export("--out", file, "--delete", "--yes", "--reason", "INC-7")
	if code != 0 {
		t.Fatalf("export --delete: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "audit: "+filepath.Join(w.state, "audit")+" (local: not shared") {
		t.Errorf("export --delete does not say where its record goes:\n%s", stderr)
	}
	runs := w.localRuns()
	if len(runs) != 1 {
		t.Fatalf("%d records, want 1", len(runs))
	}
	r := runs[0]
	if r.Verb != "export" || r.Reason != "INC-7" || r.Target.DLQ != w.dlq || r.Finished == nil || r.Finished.Counts["deleted"] != 7 || r.Finished.Counts["exported"] != 7 {
		t.Errorf("record: verb %q reason %q target %+v finished %+v", r.Verb, r.Reason, r.Target, r.Finished)
	}
	notes := map[string]bool{}
	for _, it := range r.Items {
		if it.Action != "deleted" || it.MovedTo != file {
			t.Errorf("item %+v", it)
		}
		notes[it.NotificationID] = true
	}
	if len(r.Items) != 7 || len(notes) != 7 {
		t.Errorf("%d items of %d notifications, want 7 of 7", len(r.Items), len(notes))
	}
	if !testsupport.QueueEmpty(t, w.c, w.dlq) {
		t.Error("the DLQ is not empty after export --delete")
	}
}
