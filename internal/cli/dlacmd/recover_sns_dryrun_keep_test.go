package dlacmd

import (
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// --dry-run, then --keep, then a real run, with the topics, on one
// archive and database. What must hold: the dry run publishes nothing and
// its "would have published" is what --keep then publishes (the database
// being as the dry run found it); --keep publishes and counts exactly what
// the topics receive and keeps every object; the real run after it
// publishes again (the upserts run again, as v21 would on a redelivery)
// and counts exactly what it published.
func TestSNSDryRunThenKeepThenRunCountWhatTheTopicsReceive(t *testing.T) {
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	topics := withTopics(t, e)
	bucket := generatedArchive(t, e, 40)
	layout := dla.Layout{Stack: "demo"}
	before := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
	base := []string{"recover", "--archive", "s3://" + bucket + "/demo", "--database-url", e.dbURL, "--yes",
		"--offline", "--concurrency", "1", "-o", "ndjson"}
	counts := func(stdout string) recovery.PublishCounts {
		sns, _ := snsSummary(t, stdout)
		return recovery.PublishCounts{Execution: int(sns["execution"].(float64)), Granule: int(sns["granule"].(float64)), Pdr: int(sns["pdr"].(float64))}
	}
	received := func() recovery.PublishCounts {
		return recovery.PublishCounts{Execution: len(topics.Messages(t, recovery.TopicExecution)),
			Granule: len(topics.Messages(t, recovery.TopicGranule)), Pdr: len(topics.Messages(t, recovery.TopicPdr))}
	}

	dry := runAt(t, now, e.env, "", append(base, "--dry-run")...)
	if dry.code != 0 && dry.code != 3 {
		t.Fatalf("dry run: exit %d: %s", dry.code, dry.stderr)
	}
	would := counts(dry.stdout)
	if got := received(); got != (recovery.PublishCounts{}) || would.Execution == 0 {
		t.Fatalf("dry run published %+v, would have %+v", got, would)
	}

	keep := runAt(t, now, e.env, "", append(base, "--keep")...)
	if keep.code != 0 && keep.code != 3 {
		t.Fatalf("--keep: exit %d: %s", keep.code, keep.stderr)
	}
	kept, got := counts(keep.stdout), received()
	if kept != got {
		t.Errorf("--keep: summary %+v, topics received %+v", kept, got)
	}
	if kept != would {
		t.Errorf("--keep published %+v, the dry run said %+v", kept, would)
	}
	if after := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS)); len(after) != len(before) {
		t.Fatalf("--keep: %d objects in sqs/, %d before", len(after), len(before))
	}

	r := runAt(t, now, e.env, "", base...)
	if r.code != 0 && r.code != 3 {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	if c, got := counts(r.stdout), received(); c != got || c.Execution == 0 {
		t.Errorf("run: summary %+v, topics received %+v", c, got)
	}
}
