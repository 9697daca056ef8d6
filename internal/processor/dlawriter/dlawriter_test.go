package dlawriter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/awsread"
	"github.com/deadletter/deadletter/internal/cli/dlacmd"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/processor/dlawriter"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/tidwall/gjson"
)

const seed3 = "../../../testdata/cumulus-v21-seed3"

type writerInput struct {
	Key             string          `json:"key"`
	StoredRaw       bool            `json:"storedRaw"`
	BodyKind        string          `json:"bodyKind"`
	Record          json.RawMessage `json:"record"`
	UntruncatedText string          `json:"untruncatedText"`
}

func writerInputs(t *testing.T) []writerInput {
	t.Helper()
	b, err := os.ReadFile(seed3 + "/writer-inputs.json")
	if err != nil {
		t.Fatal(err)
	}
	var ins []writerInput
	if err := json.Unmarshal(b, &ins); err != nil {
		t.Fatal(err)
	}
	if len(ins) != 150 {
		t.Fatalf("%d writer inputs, want 150", len(ins))
	}
	return ins
}

// aliasObjects reads the fixtures' `replace` payloads, which name Cumulus's
// system bucket demo-internal, from the test's own bucket (a fixed bucket
// name would be shared with other tests running at the same time). Unwrap
// still checks the bucket the message names against SystemBucket.
type aliasObjects struct {
	awsread.Objects
	alias string
}

func (a aliasObjects) SystemBucket() string { return a.alias }

func (a aliasObjects) GetObject(ctx context.Context, bucket, key string) ([]byte, error) {
	if bucket == a.alias {
		bucket = a.Objects.ReplaceBucket
	}
	return a.Objects.GetObject(ctx, bucket, key)
}

// failingPuts fails Put for the objects fail picks; everything else goes
// to the inner store.
type failingPuts struct {
	archive.Store
	mu     sync.Mutex
	fail   func(body []byte) bool
	failed []string
}

func (f *failingPuts) Put(ctx context.Context, key string, body []byte) error {
	f.mu.Lock()
	if f.fail(body) {
		f.failed = append(f.failed, key)
		f.mu.Unlock()
		return errors.New("put s3://test/" + key + ": InternalError: injected")
	}
	f.mu.Unlock()
	return f.Store.Put(ctx, key, body)
}

type env struct {
	s3     *s3.Client
	bucket string
	sfn    *testsupport.SFNFake
	objs   recovery.Objects
	log    *bytes.Buffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{s3: testsupport.S3Client(t), log: &bytes.Buffer{}}
	e.bucket = testsupport.NewBucket(t, e.s3)
	if testsupport.UploadTree(t, e.s3, e.bucket, seed3+"/archive/_fixtures/s3/demo-internal", "") == 0 {
		t.Fatal("no replace payloads uploaded")
	}
	e.sfn = testsupport.NewSFNFake(t, testsupport.LoadSFN(t, seed3+"/archive/_fixtures/sfn.json"))
	e.objs = aliasObjects{Objects: awsread.Objects{Client: e.s3, ReplaceBucket: e.bucket}, alias: "demo-internal"}
	return e
}

func (e *env) processor(store archive.Store) *dlawriter.Processor {
	if store == nil {
		store = archive.NewS3(e.s3, e.bucket)
	}
	return dlawriter.NewWith(dlawriter.Config{SystemBucket: e.bucket, Stack: "demo"}, store,
		awsread.StepFunctions{Client: e.sfn.Client()}, e.objs, e.log)
}

// feed hands the records to the handler in batches of 10, as the event
// source mapping does, and returns every result line logged.
func feed(t *testing.T, p *dlawriter.Processor, ins []writerInput) (failures []string) {
	t.Helper()
	for i := 0; i < len(ins); i += 10 {
		var ev dlawriter.Event
		for _, in := range ins[i:min(i+10, len(ins))] {
			ev.Records = append(ev.Records, in.Record)
		}
		resp, err := p.Handle(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range resp.BatchItemFailures {
			failures = append(failures, f.ItemIdentifier)
		}
	}
	return failures
}

type logLine struct {
	Type        string `json:"type"`
	MessageID   string `json:"message_id"`
	Key         string `json:"key"`
	Outcome     string `json:"outcome"`
	Reason      string `json:"reason"`
	Records     int    `json:"records"`
	Archived    int    `json:"archived"`
	ArchivedRaw int    `json:"archived_raw"`
	Failed      int    `json:"failed"`
}

func logLines(t *testing.T, buf *bytes.Buffer) []logLine {
	t.Helper()
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var ll logLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		out = append(out, ll)
	}
	buf.Reset()
	return out
}

func (e *env) keys(t *testing.T) []string {
	t.Helper()
	var keys []string
	err := archive.NewS3(e.s3, e.bucket).List(context.Background(), "demo/", false, func(en archive.Entry) error {
		keys = append(keys, en.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func (e *env) get(t *testing.T, key string) []byte {
	t.Helper()
	b, err := archive.NewS3(e.s3, e.bucket).Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var uuidRE = regexp.MustCompile(`^(.+)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`)

// keyParts splits <stack>/dead-letter-archive/sqs/<date>/<name>-<uuid>.
func keyParts(t *testing.T, key string) (date, name string) {
	t.Helper()
	dir, base := path.Split(key)
	m := uuidRE.FindStringSubmatch(base)
	if m == nil || !strings.HasPrefix(dir, "demo/dead-letter-archive/sqs/") {
		t.Fatalf("key %q is not of the form demo/dead-letter-archive/sqs/<date>/<name>-<uuid>", key)
	}
	return path.Base(dir), m[1]
}

// TestArchiverParityWithCumulusV21 feeds the 150 DLQ records v21's writer
// turned into the seed-3 archive through the handler into S3, and compares
// each object with v21's: the same bytes (JSON.stringify's text, body
// included) for every hoisted record, the same JSON value plus the reason
// for the one v21 stored raw, in the same date folder with a key of the
// same form.
func TestArchiverParityWithCumulusV21(t *testing.T) {
	e := newEnv(t)
	ins := writerInputs(t)
	p := e.processor(nil)
	if f := feed(t, p, ins); len(f) != 0 {
		t.Fatalf("batch item failures %v", f)
	}
	lines := logLines(t, e.log)
	keyOf := map[string]string{}
	summaries := 0
	for _, l := range lines {
		switch l.Type {
		case "record":
			keyOf[l.MessageID] = l.Key
		case "summary":
			summaries++
		}
	}
	if len(keyOf) != 150 || summaries != 15 {
		t.Fatalf("%d record lines, %d summaries; want 150 and 15", len(keyOf), summaries)
	}

	exact, raw, noTime := 0, 0, 0
	for _, in := range ins {
		var rec struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(in.Record, &rec)
		key := keyOf[rec.MessageID]
		if key == "" {
			t.Fatalf("no key logged for %s", rec.MessageID)
		}
		want := []byte(in.UntruncatedText)
		if len(want) == 0 {
			want, _ = os.ReadFile(filepath.Join(seed3, "archive", in.Key))
		}
		wantDate, wantName := keyParts(t, in.Key)
		gotDate, gotName := keyParts(t, key)
		var v21 struct {
			Time *string `json:"time"`
		}
		_ = json.Unmarshal(want, &v21)
		if v21.Time == nil {
			// v21 dates these by the moment it writes them; the archiver
			// by the moment SQS first handed the message over (the same
			// day on a first delivery, and stable on a redelivery).
			noTime++
			ms, _ := strconv.ParseInt(gjson.GetBytes(in.Record, "attributes.ApproximateFirstReceiveTimestamp").String(), 10, 64)
			wantDate = time.UnixMilli(ms).UTC().Format(dla.DateLayout)
		}
		if gotDate != wantDate || gotName != wantName {
			t.Errorf("%s (%s): key %s, want %s/%s-<uuid>", in.Key, in.BodyKind, key, wantDate, wantName)
		}
		got := e.get(t, key)
		if in.StoredRaw {
			raw++
			var g, w map[string]any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			_ = json.Unmarshal(want, &w)
			reason, _ := g[dla.ArchiveErrorKey].(string)
			delete(g, dla.ArchiveErrorKey)
			if !reflect.DeepEqual(g, w) || !strings.Contains(reason, "not valid JSON") {
				t.Errorf("%s: stored raw as %s", in.Key, got)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			var g, w map[string]any
			_ = json.Unmarshal(got, &g)
			_ = json.Unmarshal(want, &w)
			for k := range w {
				if !reflect.DeepEqual(g[k], w[k]) {
					t.Errorf("%s (%s): %s = %.200v, want %.200v", in.Key, in.BodyKind, k, g[k], w[k])
				}
			}
			if len(g) != len(w) || reflect.DeepEqual(g, w) {
				t.Errorf("%s (%s): not the bytes v21 wrote:\n got %.300s\nwant %.300s", in.Key, in.BodyKind, got, want)
			}
			continue
		}
		exact++
	}
	t.Logf("%d objects byte for byte as v21 wrote them, %d stored raw with the reason, %d dated by their first receive", exact, raw, noTime)
	if exact != 149 || raw != 1 || noTime != 3 {
		t.Errorf("%d exact, %d raw; want 149 and 1", exact, raw)
	}
	if n := e.sfn.Calls("GetExecutionHistory"); n == 0 {
		t.Errorf("no execution history read: failed executions were not unwrapped as v21 does")
	}

	// A batch delivered again overwrites: the same keys, no new object.
	before := e.keys(t)
	if len(before) != 150 {
		t.Fatalf("%d objects, want 150", len(before))
	}
	if f := feed(t, e.processor(nil), ins); len(f) != 0 {
		t.Fatalf("batch item failures on the retry: %v", f)
	}
	for _, l := range logLines(t, e.log) {
		if l.Type == "record" && keyOf[l.MessageID] != l.Key {
			t.Errorf("%s: retried under %s, first under %s", l.MessageID, l.Key, keyOf[l.MessageID])
		}
	}
	if after := e.keys(t); !reflect.DeepEqual(after, before) {
		t.Errorf("the retry changed the archive: %d objects, were %d", len(after), len(before))
	}

	// dla search reads every object: the hoisted ones as records with
	// v21's fields, the raw one named unreadable with why.
	searchArchive(t, e, ins, keyOf)
}

func searchArchive(t *testing.T, e *env, ins []writerInput, keyOf map[string]string) {
	t.Helper()
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL_S3": testsupport.S3Endpoint(t)})
	ios, _, out, errOut := iostreams.Test()
	getenv := func(string) string { return "" }
	ios.SetEnv(getenv)
	code := dlacmd.Run(context.Background(), dlacmd.NewFactory(ios, getenv),
		[]string{"search", "--archive", "s3://" + e.bucket + "/demo", "--ignore-unreadable", "-v", "-o", "ndjson"})
	if code != 0 {
		t.Fatalf("dla search exit %d: %s", code, errOut)
	}
	views := map[string]dla.View{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var v dla.View
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("search line %q: %v", l, err)
		}
		views[v.Key] = v
	}
	for _, in := range ins {
		var rec struct {
			MessageID string `json:"messageId"`
		}
		_ = json.Unmarshal(in.Record, &rec)
		key := keyOf[rec.MessageID]
		if in.StoredRaw {
			if !strings.Contains(errOut.String(), "unreadable "+key+": layer 1 body is not valid JSON") {
				t.Errorf("the raw object %s is not reported unreadable: %s", key, errOut)
			}
			continue
		}
		v, ok := views[key]
		if !ok {
			t.Errorf("dla search does not list %s", key)
			continue
		}
		if v.Generation != string(dla.GenDLARecord) || v.MessageID == nil || *v.MessageID != rec.MessageID {
			t.Errorf("%s: generation %s, message id %v", key, v.Generation, v.MessageID)
		}
	}
	if len(views) != 149 {
		t.Errorf("dla search listed %d objects, want 149", len(views))
	}
}

// TestArchiverReportsExactlyTheFailedPut fails one put of a batch: that
// record alone comes back as a batch item failure, the others are written;
// delivered again, it is written under the key it would have had.
func TestArchiverReportsExactlyTheFailedPut(t *testing.T) {
	e := newEnv(t)
	ins := writerInputs(t)[:10]
	victim := ins[3]
	var rec struct {
		MessageID string `json:"messageId"`
	}
	_ = json.Unmarshal(victim.Record, &rec)
	store := &failingPuts{Store: archive.NewS3(e.s3, e.bucket), fail: func(body []byte) bool {
		return bytes.Contains(body, []byte(`"messageId":"`+rec.MessageID+`"`))
	}}
	failures := feed(t, e.processor(store), ins)
	if !reflect.DeepEqual(failures, []string{rec.MessageID}) || len(store.failed) != 1 {
		t.Fatalf("batch item failures %v (puts failed %v), want [%s]", failures, store.failed, rec.MessageID)
	}
	var summary logLine
	for _, l := range logLines(t, e.log) {
		if l.Type == "record" && (l.MessageID == rec.MessageID) != (l.Outcome == string(dlawriter.Failed)) {
			t.Errorf("log: %+v", l)
		}
		if l.Type == "summary" {
			summary = l
		}
	}
	if summary.Records != 10 || summary.Failed != 1 || summary.Archived != 9 {
		t.Errorf("summary %+v", summary)
	}
	keys := e.keys(t)
	if len(keys) != 9 {
		t.Fatalf("%d objects written, want 9: %v", len(keys), keys)
	}
	if slices.Contains(keys, store.failed[0]) {
		t.Errorf("the failed record was written: %s", store.failed[0])
	}
	// The retry (the victim alone, as SQS delivers it again).
	if f := feed(t, e.processor(nil), []writerInput{victim}); len(f) != 0 {
		t.Fatalf("retry failed: %v", f)
	}
	if got := e.keys(t); len(got) != 10 || !slices.Contains(got, store.failed[0]) {
		t.Errorf("after the retry: %d objects; the victim's key %s present: %v", len(got), store.failed[0], slices.Contains(got, store.failed[0]))
	}
}

// TestHandleSQSEventArchivesTheStructsRecords checks the events.SQSEvent
// entry point: the same key as for the raw record.
func TestHandleSQSEventArchivesTheStructsRecords(t *testing.T) {
	e := newEnv(t)
	in := writerInputs(t)[0]
	var msg events.SQSMessage
	if err := json.Unmarshal(in.Record, &msg); err != nil {
		t.Fatal(err)
	}
	resp, err := e.processor(nil).HandleSQSEvent(context.Background(), events.SQSEvent{Records: []events.SQSMessage{msg}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%v %v", resp, err)
	}
	keys := e.keys(t)
	if len(keys) != 1 {
		t.Fatalf("keys %v", keys)
	}
	var got, want map[string]any
	_ = json.Unmarshal(e.get(t, keys[0]), &got)
	w, _ := os.ReadFile(filepath.Join(seed3, "archive", in.Key))
	_ = json.Unmarshal(w, &want)
	if got["body"] != want["body"] || got["collectionId"] != want["collectionId"] || got["messageId"] != want["messageId"] {
		t.Errorf("got %.300v", got)
	}
}

func TestConfigFromEnvUsesV21sNamesAndTexts(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"stackName": "s"}, "System bucket env var is required."},
		{map[string]string{"system_bucket": "b"}, "Could not determine archive path as stackName env var is undefined."},
	} {
		_, err := dlawriter.ConfigFromEnv(func(k string) string { return c.env[k] })
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.env, err, c.want)
		}
	}
	cfg, err := dlawriter.ConfigFromEnv(func(k string) string { return map[string]string{"stackName": "s", "system_bucket": "b"}[k] })
	if err != nil || cfg != (dlawriter.Config{SystemBucket: "b", Stack: "s"}) {
		t.Errorf("%+v %v", cfg, err)
	}
}

// localProcessor is a processor over a local directory, without AWS.
func localProcessor(t *testing.T, wrap func(archive.Store) archive.Store) (*dlawriter.Processor, archive.Store, *bytes.Buffer) {
	t.Helper()
	local, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var store archive.Store = local
	if wrap != nil {
		store = wrap(local)
	}
	log := &bytes.Buffer{}
	return dlawriter.NewWith(dlawriter.Config{SystemBucket: "b", Stack: "demo"}, store, nil, nil, log), local, log
}

// A record that was not written and has no messageId cannot be named in
// batchItemFailures: the whole batch fails, so that it is delivered again.
func TestAnUnnamedRecordThatFailsFailsTheBatch(t *testing.T) {
	p, _, _ := localProcessor(t, func(s archive.Store) archive.Store {
		return &failingPuts{Store: s, fail: func([]byte) bool { return true }}
	})
	resp, err := p.Handle(context.Background(), dlawriter.Event{Records: []json.RawMessage{[]byte(`{"body":"{}"}`)}})
	if err == nil {
		t.Fatalf("no error; response %+v", resp)
	}
	p, local, _ := localProcessor(t, nil)
	resp, err = p.Handle(context.Background(), dlawriter.Event{Records: []json.RawMessage{[]byte(`{"body":"{}"}`), []byte(`{"body":"{}"}`)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	var keys []string
	_ = local.List(context.Background(), "demo/", false, func(e archive.Entry) error { keys = append(keys, e.Key); return nil })
	if len(keys) != 1 {
		t.Errorf("the same unnamed record twice gave %d objects, want 1 (its bytes name it): %v", len(keys), keys)
	}
}

// An execution name no store can take (a NUL byte) is archived as unknown.
func TestAnExecutionNameNoStoreTakesIsArchivedAsUnknown(t *testing.T) {
	p, _, log := localProcessor(t, nil)
	rec := `{"messageId":"m1","eventSourceARN":"q","body":"{\"time\":\"2024-05-06T00:00:00Z\",\"detail\":{\"executionArn\":\"arn:x:e\\u0000vil\",\"status\":\"RUNNING\",\"input\":\"{}\"}}"}`
	resp, err := p.Handle(context.Background(), dlawriter.Event{Records: []json.RawMessage{[]byte(rec)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("%+v %v: %s", resp, err, log)
	}
	lines := logLines(t, log)
	want := "demo/dead-letter-archive/sqs/2024-05-06/unknown-" + dla.MessageUUID("q", "m1")
	if lines[0].Key != want || lines[0].Outcome != string(dlawriter.Archived) {
		t.Errorf("%+v, want key %s", lines[0], want)
	}
}
