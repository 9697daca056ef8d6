package recovery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// dbFake records the writes; its lookups know the ids it was given.
type dbFake struct {
	collections, asyncOps, executions, providers, pdrs map[string]int64
	other                                              string // OtherCollection's answer
	dropGranules                                       bool
	filesErr                                           error

	execRows    []*ExecutionRow
	pdrRows     []*PdrRow
	granules    []*GranuleWrite
	files       map[int64][]FileRow
	marked      []string // granule ids marked failed
	markedErrs  []string // the error column each was marked with
	markMissing bool     // MarkGranuleFailed finds no granule row
	links       []string
	writeCalls  int
}

func newDBFake() *dbFake {
	return &dbFake{
		collections: map[string]int64{"MOD09GQ___006": 1}, asyncOps: map[string]int64{}, executions: map[string]int64{},
		providers: map[string]int64{"LPDAAC": 3}, pdrs: map[string]int64{}, files: map[int64][]FileRow{},
	}
}

func lookup(m map[string]int64, k string) (*int64, error) {
	if v, ok := m[k]; ok {
		return &v, nil
	}
	return nil, nil
}

func (d *dbFake) CollectionID(_ context.Context, name, version string) (*int64, error) {
	return lookup(d.collections, name+"___"+version)
}
func (d *dbFake) AsyncOperationID(_ context.Context, id string) (*int64, error) {
	return lookup(d.asyncOps, id)
}
func (d *dbFake) ExecutionID(_ context.Context, arn string) (*int64, error) {
	return lookup(d.executions, arn)
}
func (d *dbFake) ProviderID(_ context.Context, name string) (*int64, error) {
	return lookup(d.providers, name)
}
func (d *dbFake) PdrID(_ context.Context, name string) (*int64, error) { return lookup(d.pdrs, name) }
func (d *dbFake) UpsertExecution(_ context.Context, r *ExecutionRow) (int64, error) {
	d.writeCalls++
	d.execRows = append(d.execRows, r)
	return 42, nil
}
func (d *dbFake) UpsertPdr(_ context.Context, r *PdrRow) (bool, error) {
	d.writeCalls++
	d.pdrRows = append(d.pdrRows, r)
	d.pdrs[r.Name] = 7
	return true, nil
}
func (d *dbFake) OtherCollection(context.Context, string, int64) (string, error) { return d.other, nil }
func (d *dbFake) WriteGranule(_ context.Context, g *GranuleWrite) (GranuleResult, error) {
	d.writeCalls++
	if d.other != "" {
		return GranuleResult{}, OtherCollectionError(g.Row.GranuleID, g.CollectionID, d.other)
	}
	d.granules = append(d.granules, g)
	return GranuleResult{CumulusID: int64(100 + len(d.granules)), Dropped: d.dropGranules}, nil
}
func (d *dbFake) MarkGranuleFailed(_ context.Context, gid string, _ int64, errJSON string) (bool, error) {
	d.writeCalls++
	if d.markMissing {
		return false, nil
	}
	d.marked = append(d.marked, gid)
	d.markedErrs = append(d.markedErrs, errJSON)
	return true, nil
}
func (d *dbFake) WriteFiles(_ context.Context, id, _ int64, files []FileRow) error {
	d.writeCalls++
	if d.filesErr != nil {
		return d.filesErr
	}
	d.files[id] = files
	return nil
}
func (d *dbFake) LinkGranules(_ context.Context, gids []string, _ int64) error {
	d.writeCalls++
	d.links = append(d.links, gids...)
	return nil
}

var testNow = time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC)

// message is a completed IngestGranule message with one granule; edit
// rewrites parts of it.
func message(edits ...func(string) string) gjson.Result {
	m := `{"cumulus_meta":{"state_machine":"` + smArn + `","execution_name":"e1","workflow_start_time":1709251200000,"workflow_stop_time":1709251260000,"cumulus_version":"21.0.0"},` +
		`"meta":{"status":"completed","workflow_name":"IngestGranule","collection":{"name":"MOD09GQ","version":"006"},"provider":{"id":"LPDAAC","protocol":"https","host":"e4ftl01.cr.usgs.gov"}},` +
		`"exception":null,` +
		`"payload":{"granules":[{"granuleId":"G1","dataType":"MOD09GQ","version":"006","files":[` +
		`{"bucket":"prot","key":"MOD09GQ___006/G1.hdf","fileName":"G1.hdf","size":1000,"checksumType":"md5","checksum":"abc","path":"/data"}]}]}}`
	for _, e := range edits {
		m = e(m)
	}
	return gjson.Parse(m)
}

func replace(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("message edit: " + old + " not found")
		}
		return strings.Replace(s, old, new, 1)
	}
}

func write(t *testing.T, db *dbFake, sfn StepFunctions, msg gjson.Result) (*Result, error) {
	t.Helper()
	w := &Writer{DB: db, SFN: sfn, Now: func() time.Time { return testNow }}
	if builtAhead {
		m := Index(msg)
		p := w.Prepare(context.Background(), m)
		if sfn == nil && msg.Get("payload.granules.#").Int() > 0 && msg.Get("cumulus_meta.workflow_start_time").Exists() && p.mc == nil {
			t.Fatal("Prepare built nothing")
		}
		return w.WriteMsg(context.Background(), m, p)
	}
	return w.Write(context.Background(), msg)
}

// builtAhead makes write() build the granules ahead (Writer.Prepare).
var builtAhead bool

// TestWriteWithGranulesBuiltAhead runs the write tests again with each
// message's granules built ahead by Writer.Prepare, as recover's prefetch
// builds them: every result, row, error and mark must be the same.
func TestWriteWithGranulesBuiltAhead(t *testing.T) {
	builtAhead = true
	defer func() { builtAhead = false }()
	for name, test := range map[string]func(*testing.T){
		"CompletedMessage": TestWriteCompletedMessage, "UnmetRequirementsWriteNothing": TestWriteUnmetRequirementsWriteNothing,
		"Flags": TestWriteFlags, "DescribeExecutionFailureWarns": TestWriteDescribeExecutionFailureWarns,
		"DroppedIsNotWrittenOrFailed": TestWriteDroppedIsNotWrittenOrFailed, "GranuleFailures": TestWriteGranuleFailures,
		"RunningExecutionKeepsOriginalPayload": TestWriteRunningExecutionKeepsOriginalPayload, "Pdr": TestWritePdr,
		"GranuleFields": TestGranuleFields,
	} {
		t.Run(name, test)
	}
}

func TestWriteCompletedMessage(t *testing.T) {
	db := newDBFake()
	start, stop := time.UnixMilli(1709251200000), time.UnixMilli(1709251230000)
	sfn := &sfnFake{desc: map[string]ExecutionDescription{execArn: {StartDate: start, StopDate: stop}}}
	res, err := write(t, db, sfn, message())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome() != Written || res.Execution != Written || len(res.Granules) != 1 || res.Granules[0].Outcome != Written || !res.ProcessingTimes {
		t.Fatalf("result %+v", res)
	}
	e := db.execRows[0]
	if e.Arn != execArn || e.Status != "completed" || e.Duration != 60 || e.FinalPayload == "" || e.OriginalPayload != "" ||
		!strings.HasPrefix(e.URL, "https://console.aws.amazon.com/states/home?region=us-east-1#/executions/details/") {
		t.Errorf("execution row %+v", e)
	}
	g := db.granules[0]
	if g.Row.Status != "completed" || g.Row.CollectionID != 1 || g.Row.ProviderID == nil || *g.Row.ProviderID != 3 || *g.ExecutionID != 42 ||
		g.Row.ProcessingStart == nil || !g.Row.ProcessingStart.Equal(start) || !g.Row.ProcessingEnd.Equal(stop) {
		t.Errorf("granule row %+v", g.Row)
	}
	f := db.files[101]
	if len(f) != 1 || *f[0].Bucket != "prot" || *f[0].Key != "MOD09GQ___006/G1.hdf" || *f[0].Size != 1000 ||
		*f[0].Source != "https://e4ftl01.cr.usgs.gov/data/G1.hdf" {
		t.Errorf("files %+v", f)
	}
}

func TestWriteUnmetRequirementsWriteNothing(t *testing.T) {
	db := newDBFake()
	msg := message(replace(`"execution_name":"e1",`, `"execution_name":"e1","parentExecutionArn":"arn:parent","asyncOperationId":"0eb8e809-8790-5409-1239-bcd9e8d28b8e",`),
		replace(`"MOD09GQ","version":"006"}`, `"NOPE","version":"1"}`))
	_, err := write(t, db, nil, msg)
	var ue *UnmetRequirementsError
	if !errors.As(err, &ue) || len(ue.Missing) != 3 || db.writeCalls != 0 {
		t.Fatalf("err %v (missing %v), %d writes", err, ue, db.writeCalls)
	}
	msg = message(replace(`"execution_name":"e1",`, `"execution_name":"e1","asyncOperationId":"not-a-uuid",`))
	if _, err := write(t, db, nil, msg); err == nil || !strings.Contains(err.Error(), "not a UUID") || db.writeCalls != 0 {
		t.Errorf("a malformed async operation id: %v", err)
	}
}

func TestWriteFlags(t *testing.T) {
	types := func(ts string) func(string) string {
		return replace(`"cumulus_version":"21.0.0"`, `"cumulus_version":"21.0.0","sf_event_sqs_to_db_records_types":{"IngestGranule":{"completed":`+ts+`}}`)
	}
	cases := []struct {
		name                string
		msg                 gjson.Result
		exec, pdr, granules bool
	}{
		{"none configured", message(), true, true, true},
		{"execution only", message(types(`["execution"]`)), true, false, false},
		{"granule and pdr", message(types(`["pdr","granule"]`)), false, true, true},
		{"another status configured", message(types(`["execution"]`), replace(`"status":"completed"`, `"status":"failed"`)), true, true, true},
		{"reportMessageSource overrides", message(types(`[]`), replace(`"meta":{`, `"meta":{"reportMessageSource":true,`)), true, true, true},
	}
	for _, c := range cases {
		e, p, g := writeFlags(c.msg)
		if e != c.exec || p != c.pdr || g != c.granules {
			t.Errorf("%s: %v %v %v, want %v %v %v", c.name, e, p, g, c.exec, c.pdr, c.granules)
		}
	}
	// Granule writes off: the granules are only linked to the execution.
	db := newDBFake()
	res, err := write(t, db, nil, message(types(`["execution"]`)))
	if err != nil || !res.GranuleLinksOnly || len(db.granules) != 0 || len(db.links) != 1 || db.links[0] != "G1" {
		t.Errorf("links only: %+v %v, granules %d links %v", res, err, len(db.granules), db.links)
	}
}

func TestWriteDescribeExecutionFailureWarns(t *testing.T) {
	db := newDBFake()
	// v21 fails the whole message; here the granule is written without processing times.
	res, err := write(t, db, &sfnFake{err: errors.New("ExecutionDoesNotExist")}, message())
	if err != nil || res.ProcessingTimes || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "without processing times") {
		t.Fatalf("%+v %v", res, err)
	}
	if g := db.granules[0].Row; g.ProcessingStart != nil || g.ProcessingEnd != nil {
		t.Errorf("processing times written: %+v", g)
	}
}

func TestWriteDroppedIsNotWrittenOrFailed(t *testing.T) {
	db := newDBFake()
	db.dropGranules = true
	res, err := write(t, db, nil, message(replace(`"status":"completed"`, `"status":"running"`)))
	if err != nil || res.Granules[0].Outcome != Dropped {
		t.Fatalf("%+v %v", res, err)
	}
	if len(db.files) != 0 {
		t.Error("files written for a dropped granule")
	}
	// The execution was written, so the message as a whole was.
	if res.Outcome() != Written {
		t.Errorf("outcome %s", res.Outcome())
	}
	r := &Result{Execution: Skipped, Granules: []GranuleOutcome{{Outcome: Dropped}}}
	if r.Outcome() != Dropped {
		t.Errorf("only dropped writes: %s", r.Outcome())
	}
}

func TestWriteGranuleFailures(t *testing.T) {
	// A granuleId in another collection fails the granule (AggregateError).
	db := newDBFake()
	db.other = "MOD09GQ___061"
	_, err := write(t, db, nil, message())
	var agg *AggregateError
	if !errors.As(err, &agg) || !strings.Contains(err.Error(), "A granule already exists for granuleId: G1") {
		t.Errorf("other collection: %v", err)
	}

	// A schema-invalid completed granule is marked failed and fails the message.
	db = newDBFake()
	_, err = write(t, db, nil, message(replace(`"checksum":"abc"`, `"checksum":123`)))
	var sv *SchemaValidationError
	if !errors.As(err, &sv) || len(db.marked) != 1 || len(db.granules) != 0 {
		t.Errorf("schema-invalid: %v, marked %v, written %d", err, db.marked, len(db.granules))
	}
	// The error column and the message's error are v21's (issue 11's example).
	const v21Column = `{"errors":"[{},{\"Error\":\"Failed writing granule record due to SchemaValdationError.\",\"Cause\":{\"name\":\"SchemaValidationError\",\"detail\":\"[{\\\"keyword\\\":\\\"type\\\",\\\"dataPath\\\":\\\".files[0].checksum\\\",\\\"schemaPath\\\":\\\"#/properties/files/items/properties/checksum/type\\\",\\\"params\\\":{\\\"type\\\":\\\"string\\\"},\\\"message\\\":\\\"should be string\\\"}]\"}}]"}`
	if len(db.markedErrs) != 1 || db.markedErrs[0] != v21Column {
		t.Errorf("schema-invalid error column\n got %q\nwant %s", db.markedErrs, v21Column)
	}
	if want := "AggregateError: granule G1: Error: Granule/granule files failed schema validation and will be updated in the datastore with the error and a status of failed"; err == nil || err.Error() != want {
		t.Errorf("schema-invalid message error\n got %v\nwant %s", err, want)
	}

	// A schema-invalid running granule is not marked; the schema error is the message's.
	db = newDBFake()
	_, err = write(t, db, nil, message(replace(`"checksum":"abc"`, `"checksum":123`), replace(`"status":"completed"`, `"status":"running"`)))
	if !errors.As(err, &sv) || len(db.marked) != 0 || !strings.HasSuffix(err.Error(), `granule G1: SchemaValidationError: The record has validation errors: [{"keyword":"type","dataPath":".files[0].checksum","schemaPath":"#/properties/files/items/properties/checksum/type","params":{"type":"string"},"message":"should be string"}]`) {
		t.Errorf("schema-invalid running: %v, marked %v", err, db.marked)
	}

	// When the granule row is not there to be marked, v21's lookup error replaces the schema error.
	db = newDBFake()
	db.markMissing = true
	_, err = write(t, db, nil, message(replace(`"checksum":"abc"`, `"checksum":123`)))
	var rdne *RecordDoesNotExist
	if !errors.As(err, &rdne) || errors.As(err, &sv) || !strings.Contains(err.Error(), `RecordDoesNotExist: Record in granules with identifiers {"granule_id":"G1","collection_cumulus_id":1} does not exist.`) {
		t.Errorf("schema-invalid, no row to mark: %v", err)
	}

	// Files that fail mark the granule failed; the message still counts as written (as v21).
	db = newDBFake()
	db.filesErr = errors.New("duplicate key")
	res, err := write(t, db, nil, message())
	if err != nil || res.Granules[0].FilesError == "" || len(db.marked) != 1 {
		t.Errorf("files failure: %+v %v, marked %v", res, err, db.marked)
	}

	// A missing provider row fails the granule (RecordDoesNotExist).
	db = newDBFake()
	delete(db.providers, "LPDAAC")
	_, err = write(t, db, nil, message())
	var rd *RecordDoesNotExist
	if !errors.As(err, &rd) || rd.Table != "providers" {
		t.Errorf("missing provider: %v", err)
	}
}

func TestWriteRunningExecutionKeepsOriginalPayload(t *testing.T) {
	db := newDBFake()
	if _, err := write(t, db, nil, message(replace(`"status":"completed"`, `"status":"running"`))); err != nil {
		t.Fatal(err)
	}
	if e := db.execRows[0]; e.OriginalPayload == "" || e.FinalPayload != "" || e.Status != "running" {
		t.Errorf("running execution row %+v", e)
	}
}

func TestWritePdr(t *testing.T) {
	db := newDBFake()
	msg := message(replace(`"payload":{`, `"payload":{"pdr":{"name":"P.PDR","PANSent":true},"running":["a"],"completed":["b","c"],"failed":["d"],`))
	res, err := write(t, db, nil, msg)
	if err != nil || res.Pdr != Written {
		t.Fatalf("%+v %v", res, err)
	}
	p := db.pdrRows[0]
	if p.Name != "P.PDR" || p.Progress != 75 || p.Stats != `{"processing":1,"completed":2,"failed":1,"total":4}` || !*p.PANSent || *p.PANMessage != "N/A" ||
		p.CollectionID != 1 || p.ProviderID != 3 || *p.ExecutionID != 42 {
		t.Errorf("pdr row %+v", p)
	}
	if g := db.granules[0].Row; g.PdrID == nil || *g.PdrID != 7 {
		t.Errorf("granule pdr id %v", g.PdrID)
	}
}

func TestParseException(t *testing.T) {
	for in, want := range map[string]string{
		`null`:                       `{}`,
		`{"Error":"X", "Cause":"y"}`: `{"Error":"X","Cause":"y"}`,
		`"boom"`:                     `{"Error":"Unknown Error","Cause":"boom"}`,
		`12`:                         `{"Error":"Unknown Error","Cause":12}`,
	} {
		if got := parseException(gjson.Parse(in)); got != want {
			t.Errorf("parseException(%s) = %s, want %s", in, got, want)
		}
	}
	if got := parseException(gjson.Result{}); got != "{}" {
		t.Errorf("absent exception: %s", got)
	}
}

func TestBuildURLAndURLJoin(t *testing.T) {
	for in, want := range map[string]string{
		`{"protocol":"https","host":"h.example"}`:             "https://h.example/",
		`{"protocol":"https","host":"h.example","port":443}`:  "https://h.example/",
		`{"protocol":"http","host":"h.example","port":8080}`:  "http://h.example:8080/",
		`{"protocol":"ftp","host":"h.example","port":"2121"}`: "ftp://h.example:2121/",
		`{"protocol":"s3","host":"bucket","port":9000}`:       "s3://bucket",
	} {
		if got, err := buildURL(gjson.Parse(in)); err != nil || got != want {
			t.Errorf("buildURL(%s) = %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`{"host":"h"}`, `{"protocol":"https"}`} {
		if _, err := buildURL(gjson.Parse(bad)); err == nil {
			t.Errorf("buildURL(%s) gave no error", bad)
		}
	}
	for _, c := range []struct {
		parts []string
		want  string
	}{
		{[]string{"https://h/", "/data/", "f.hdf"}, "https://h/data/f.hdf"},
		{[]string{"s3://b", "", "f.hdf"}, "s3://b/f.hdf"},
		{[]string{"https://h/", "data", "/f.hdf"}, "https://h/data/f.hdf"},
	} {
		if got := urlJoin(c.parts...); got != c.want {
			t.Errorf("urlJoin(%q) = %q, want %q", c.parts, got, c.want)
		}
	}
}

func TestGranuleFields(t *testing.T) {
	db := newDBFake()
	// Sizes are JSON numbers (doubles, as in JavaScript), summed as big
	// integers: 2^53 + 1 stays exact where a double sum would round it away.
	msg := message(
		replace(`"granuleId":"G1",`, `"granuleId":"G1","producerGranuleId":"P1","post_to_cmr_duration":1500,"sync_granule_duration":2500,"published":true,`),
		replace(`"size":1000,`, `"size":9007199254740992,`),
		replace(`"path":"/data"}`, `"path":"/data"},{"bucket":"prot","key":"MOD09GQ___006/G1.jpg","fileName":"G1.jpg","size":1}`),
		replace(`"exception":null`, `"exception":"boom"`), replace(`"status":"completed"`, `"status":"failed"`))
	if _, err := write(t, db, nil, msg); err != nil {
		t.Fatal(err)
	}
	g := db.granules[0].Row
	start := time.UnixMilli(1709251200000).UTC()
	if g.Status != "failed" || g.ProducerGranuleID != "P1" || *g.TimeToArchive != 1.5 || *g.TimeToProcess != 2.5 || !*g.Published ||
		*g.ProductVolume != "9007199254740993" || !g.CreatedAt.Equal(start) || *g.Duration != testNow.Sub(start).Seconds() ||
		g.Error != `{"Error":"Unknown Error","Cause":"boom"}` {
		t.Errorf("granule row %+v (volume %v, error %s)", g, *g.ProductVolume, g.Error)
	}
	// A createdAt on the message granule wins over the workflow start time.
	db = newDBFake()
	if _, err := write(t, db, nil, message(replace(`"granuleId":"G1",`, `"granuleId":"G1","createdAt":1700000000000,`))); err != nil {
		t.Fatal(err)
	}
	if got := db.granules[0].Row.CreatedAt; !got.Equal(time.UnixMilli(1700000000000)) {
		t.Errorf("createdAt %v", got)
	}
}
