package cumulusdb_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The notifications v21 publishes after each write, translated from the
// rows the database returned, against a real PostgreSQL.

func notifying(t *testing.T) (*recovery.Writer, *testsupport.RecordingNotifier) {
	_, w := newDB(t)
	n := &testsupport.RecordingNotifier{}
	w.Notifier = n
	return w, n
}

func wantKeys(t *testing.T, n *testsupport.RecordingNotifier, topic recovery.Topic, want ...string) {
	t.Helper()
	if got := n.Keys(topic); !slices.Equal(got, want) {
		t.Fatalf("%s notifications:\n got %q\nwant %q", topic, got, want)
	}
}

const arn = "arn:aws:states:us-east-1:1:execution:W:"

func TestNotificationsPublishTheRowsWritten(t *testing.T) {
	w, n := notifying(t)
	res := write(t, w, message("e1", "completed", 1000, `,"cumulus_version":"21.0.0"`, granule("G1", file("b", "k1", 5))))
	if *res.Published != (recovery.PublishCounts{Execution: 1, Granule: 1}) {
		t.Fatalf("counts %+v", *res.Published)
	}
	// translatePostgresExecutionToApiExecution and
	// translatePostgresGranuleToApiGranule, field for field: nil fields
	// left out, times in epoch ms, reals as node-postgres reads them, the
	// bigint product volume as a string.
	wantExec := `{"name":"e1","status":"completed","arn":"` + arn + `e1","duration":0,"error":{},` +
		`"finalPayload":{"granules":[{"files":[{"key":"k1","size":5,"bucket":"b","fileName":"k1"}],"granuleId":"G1"}]},` +
		`"type":"W","execution":"https://console.aws.amazon.com/states/home?region=us-east-1#/executions/details/` + arn + `e1",` +
		`"cumulusVersion":"21.0.0","collectionId":"C___1","archived":false,"createdAt":1000,"updatedAt":1714521600000,"timestamp":1714521600000}`
	wantGranule := `{"event":"Update","record":{"archived":false,"collectionId":"C___1","createdAt":1000,"duration":1714521600,"error":{},` +
		`"execution":"https://console.aws.amazon.com/states/home?region=us-east-1#/executions/details/` + arn + `e1",` +
		`"files":[{"bucket":"b","fileName":"k1","key":"k1","size":5}],"granuleId":"G1","producerGranuleId":"G1","productVolume":"5",` +
		`"provider":"P","published":false,"status":"completed","timestamp":1714521600000,"timeToArchive":0,"timeToPreprocess":0,"updatedAt":1714521600000}}`
	if p := seededProviders(t); p != nil {
		wantExec = string(p.Prefix([]byte(wantExec)))
		wantGranule = strings.Replace(wantGranule, `"record":{`, `"record":{"metricsProvider":"CUMULUS","cmrProvider":"CUMULUS",`, 1)
	}
	if len(n.All) != 2 || n.All[0].Message != wantExec || n.All[1].Message != wantGranule {
		t.Fatalf("notifications:\n%+v\nwant\n%s\n%s", n.All, wantExec, wantGranule)
	}
	// A late "running": the execution row keeps its status and that is
	// what is published; the granule is dropped and not published.
	res = write(t, w, message("e1", "running", 1000, "", granule("G1", "")))
	if res.Granules[0].Outcome != recovery.Dropped || *res.Published != (recovery.PublishCounts{Execution: 1}) {
		t.Fatalf("late running: %+v %+v", res.Granules, *res.Published)
	}
	wantKeys(t, n, recovery.TopicExecution, arn+"e1|completed", arn+"e1|completed")
	wantKeys(t, n, recovery.TopicGranule, "Update|C___1|G1|completed")
	if got := gjson.Get(n.All[2].Message, "originalPayload.granules.0.granuleId").String(); got != "G1" {
		t.Fatalf("the running upsert's original_payload is not in the published row: %s", n.All[2].Message)
	}
}

func TestFileWriteFailurePublishesFailedThenWritten(t *testing.T) {
	w, n := notifying(t)
	write(t, w, message("e14", "completed", 1000, "", granule("G14", `{"bucket":"b","fileName":"x","size":1}`+","+file("b", "good", 2))))
	// updateGranuleStatusToFailed publishes the failed row; then
	// _writeGranule publishes the row its upsert returned (completed), both
	// with the files as they are after the failed write.
	wantKeys(t, n, recovery.TopicGranule, "Update|C___1|G14|failed", "Update|C___1|G14|completed")
	wantFiles := `["good"]`
	if testsupport.Generation(t).Partitioned() {
		wantFiles = `[]` // v22 writes a granule's files all or none
	}
	for _, m := range n.All[1:] {
		if files := gjson.Get(m.Message, "record.files.#.key").String(); files != wantFiles {
			t.Fatalf("files %s in %s", files, m.Message)
		}
	}
	if e := gjson.Get(n.All[1].Message, "record.error.errors").String(); !strings.Contains(e, "Failed writing files to PostgreSQL.") {
		t.Fatalf("failed row error %q", e)
	}
}

func TestSchemaInvalidGranulePublishesFailedRowOnlyWhenItExists(t *testing.T) {
	w, n := notifying(t)
	write(t, w, message("e16", "completed", 1000, "", granule("G16", file("b", "k16", 1))))
	bad := func(id string) string {
		return fmt.Sprintf(`{"granuleId":%q,"files":[{"bucket":"b","key":"k-%s","checksum":12345,"size":1}]}`, id, id)
	}
	_, err := w.Write(context.Background(), message("e17", "completed", 2000, "", bad("G16"), bad("Gnew")))
	var sv *recovery.SchemaValidationError
	if !errors.As(err, &sv) {
		t.Fatalf("want SchemaValidationError, got %v", err)
	}
	// G16 exists: marked failed and published. Gnew has no row: nothing.
	wantKeys(t, n, recovery.TopicGranule, "Update|C___1|G16|completed", "Update|C___1|G16|failed")
	wantKeys(t, n, recovery.TopicExecution, arn+"e16|completed", arn+"e17|completed")
}

func TestPdrKeptByItsGuardIsPublishedAsItIs(t *testing.T) {
	w, n := notifying(t)
	m := func(name string, running, completed int) gjson.Result {
		return gjson.Parse(fmt.Sprintf(`{"cumulus_meta":{"state_machine":"arn:aws:states:us-east-1:1:stateMachine:W","execution_name":%q,"workflow_start_time":1000},
 "meta":{"status":"running","workflow_name":"W","collection":{"name":"C","version":"1"},"provider":{"id":"P","protocol":"s3","host":"h"}},
 "payload":{"pdr":{"name":"P1.PDR","PANSent":true},"running":[%s],"completed":[%s]}}`, name,
			strings.TrimSuffix(strings.Repeat(`"a",`, running), ","), strings.TrimSuffix(strings.Repeat(`"b",`, completed), ",")))
	}
	write(t, w, m("p1", 1, 1))
	if res := write(t, w, m("p1", 3, 1)); res.Pdr != recovery.Dropped || res.Published.Pdr != 1 {
		t.Fatalf("kept PDR: %+v", res)
	}
	if len(n.All) != 4 {
		t.Fatalf("notifications %+v", n.All)
	}
	want := `{"pdrName":"P1.PDR","provider":"P","collectionId":"C___1","status":"running","createdAt":1000,"progress":50,` +
		`"execution":"https://console.aws.amazon.com/states/home?region=us-east-1#/executions/details/` + arn + `p1",` +
		`"PANSent":true,"PANmessage":"N/A","stats":{"total":2,"failed":0,"completed":1,"processing":1},"timestamp":1714521600000,"duration":1714521600,"updatedAt":1714521600000}`
	want = string(seededProviders(t).Prefix([]byte(want)))
	for _, i := range []int{1, 3} {
		if n.All[i].Topic != recovery.TopicPdr || n.All[i].Message != want {
			t.Fatalf("PDR notification %d:\n%s\nwant\n%s", i, n.All[i].Message, want)
		}
	}
}

func TestPublishFailureFailsTheMessageAfterTheWrite(t *testing.T) {
	pool, w := newDB(t)
	down := errors.New("NotFound: Topic does not exist")
	w.Notifier = &testsupport.RecordingNotifier{Fail: map[recovery.Topic]error{recovery.TopicExecution: down}}
	_, err := w.Write(context.Background(), message("e20", "completed", 1000, "", granule("G20", file("b", "k20", 1))))
	if !recovery.IsTransient(err) || !recovery.IsPublishError(err) || !errors.Is(err, down) {
		t.Fatalf("want a transient PublishError, got %v", err)
	}
	// The execution is committed (as in v21), the granules not reached.
	if s := queryString(t, pool, `SELECT status || ' ' || (SELECT count(*) FROM granules)::text FROM executions WHERE arn LIKE '%:e20'`); s != "completed 0" {
		t.Fatalf("rows %s", s)
	}
	w.Notifier = &testsupport.RecordingNotifier{Fail: map[recovery.Topic]error{recovery.TopicGranule: down}}
	_, err = w.Write(context.Background(), message("e21", "completed", 1000, "", granule("G21", file("b", "k21", 1))))
	var agg *recovery.AggregateError
	if !recovery.IsTransient(err) || !recovery.IsPublishError(err) || !errors.As(err, &agg) {
		t.Fatalf("granule publish failure: want a transient AggregateError holding a PublishError, got %v", err)
	}
}

// seededProviders are the providers the generation under test publishes
// for a seeded collection (v22.1.1 and later: CUMULUS, the seed's
// default), nil for one that publishes none.
func seededProviders(t *testing.T) *recovery.Providers {
	switch testsupport.Generation(t) {
	case cumulusdb.V21, cumulusdb.V22:
		return nil
	}
	return &recovery.Providers{CMR: cumulusdb.DefaultProvider, Metrics: cumulusdb.DefaultProvider}
}

// A granule without files is published with its references all the same
// (collection, execution, provider) and no files: CompleteGranule reads the
// references and the files in one statement, the files joined to them.
func TestGranuleWithoutFilesIsPublishedWithItsReferences(t *testing.T) {
	w, n := notifying(t)
	write(t, w, message("e2", "completed", 1000, "", granule("G2", "")))
	var rec gjson.Result
	for _, x := range n.All {
		if x.Topic == recovery.TopicGranule {
			rec = gjson.Get(x.Message, "record")
		}
	}
	if rec.Get("granuleId").String() != "G2" || rec.Get("collectionId").String() != "C___1" || rec.Get("provider").String() != "P" ||
		!strings.HasSuffix(rec.Get("execution").String(), arn+"e2") {
		t.Fatalf("granule record without its references: %s", rec.Raw)
	}
	if files := rec.Get("files"); files.Exists() && len(files.Array()) != 0 {
		t.Fatalf("files %s, want none", files.Raw)
	}
}
