// Package gen writes realistic, deterministic Dead Letter Archive objects:
// every generation (DLA records, raw SQS records, bare Cumulus messages),
// 1 to 3 nested body/Body layers, detail as an object or a JSON string,
// every Step Functions status, 0 to 10 MODIS-like granules with files, the
// errors that really land messages in the archive, and a few malformed
// objects. The same options always give the same bytes.
package gen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
)

// Options control a generated archive.
type Options struct {
	Stack string
	Count int
	Seed  uint64
	Start time.Time // first event date (UTC)
	Days  int       // events spread over this many days
	// Malformed is the share of malformed objects (truncated, body not
	// JSON, empty); 0.03 by default, negative for none.
	Malformed float64
	// MinGranules and MaxGranules, when MaxGranules > 0, bound the granules
	// per message (recover benchmarks use 1 to 5); by default 0 to 10, and 0
	// to 2 for PDR and discovery workflows.
	MinGranules, MaxGranules int
	// NoLargePayloads leaves out the large inline payloads that 8% of the
	// messages otherwise carry (for archives of small objects).
	NoLargePayloads bool
	// Outage writes the archive a database outage leaves: every object a
	// DLA record, none malformed, three in five failed with a Knex pool
	// timeout (transient), one a missing collection (fix-first), one a
	// schema error (permanent), in that order by object index (OutageError).
	Outage bool
}

// The error texts of an Outage archive.
const (
	OutageTransient = "KnexTimeoutError: Knex: Timeout acquiring a connection. The pool is probably full. Are you missing a .transacting(trx) call?"
	OutageFixFirst  = `RecordDoesNotExist: Record in collections with identifiers {"name":"NOPE","version":"001"} does not exist.`
	OutagePermanent = "SchemaValidationError: granule.status must be one of running, completed, failed"
)

// OutageError is the error text of object i of an Outage archive.
func OutageError(i int) string {
	return []string{OutageTransient, OutageTransient, OutageTransient, OutageFixFirst, OutagePermanent}[i%5]
}

// Object is one generated archive object.
type Object struct {
	Key  string
	Body []byte
	// Kind says what the object is (dla-record, sqs-record, cumulus-message,
	// or malformed-*), for tests and for the generator's summary.
	Kind string
	// Granules are the granule ids inside it.
	Granules []string
}

type collection struct{ name, version, prefix string }

var collections = []collection{
	{"MOD09GQ", "006", "MOD09GQ"}, {"MOD09A1", "061", "MOD09A1"}, {"MOD13Q1", "061", "MOD13Q1"},
	{"MOD14A1", "061", "MOD14A1"}, {"MYD09GQ", "061", "MYD09GQ"}, {"MOD04_L2", "61", "MOD04_L2"}, {"MOD11A1", "061", "MOD11A1"},
}

var workflows = []string{"IngestGranule", "IngestAndPublishGranule", "PublishGranule", "ParsePdr", "DiscoverGranules", "BulkGranuleReingest"}

var providers = []struct{ id, protocol, host string }{
	{"LPCLOUD_S3", "s3", "lp-prod-protected"}, {"LPDAAC_HTTPS", "https", "e4ftl01.cr.usgs.gov"}, {"LANCE_NRT", "https", "nrt3.modaps.eosdis.nasa.gov"},
}

// ReferenceSeed is the reference data a Cumulus database needs before the
// generated messages can be written: their collections and providers, in
// the shape of the fixtures' _fixtures/seed.json (for `dla dev db-init`).
func ReferenceSeed() []byte {
	var cs, ps []any
	for _, c := range collections {
		cs = append(cs, obj{"name": c.name, "version": c.version})
	}
	for _, p := range providers {
		ps = append(ps, obj{"name": p.id, "protocol": p.protocol, "host": p.host})
	}
	return []byte(mustJSON(obj{"collections": cs, "providers": ps, "asyncOperations": []any{}, "parentExecutions": []any{}}))
}

type g struct {
	r    *rand.Rand
	opts Options
}

// Generate calls yield for each object, in a stable order.
func Generate(opts Options, yield func(Object) error) error {
	if opts.Stack == "" {
		opts.Stack = "demo"
	}
	if opts.Days < 1 {
		opts.Days = 1
	}
	if opts.Start.IsZero() {
		opts.Start = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	}
	if opts.Malformed == 0 {
		opts.Malformed = 0.03
	}
	if opts.Outage {
		opts.Malformed = -1
	}
	gen := &g{r: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)), opts: opts}
	for i := range opts.Count {
		if err := yield(gen.object(i)); err != nil {
			return err
		}
	}
	return nil
}

func (g *g) uuid() string {
	b := make([]byte, 16)
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func (g *g) pick(n int) int { return g.r.IntN(n) }

func (g *g) chance(p float64) bool { return g.r.Float64() < p }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps, slices and scalars are marshalled here
	}
	return string(b)
}

type obj = map[string]any

func (g *g) object(i int) Object {
	c := collections[g.pick(len(collections))]
	wf := workflows[g.pick(len(workflows))]
	prov := providers[g.pick(len(providers))]
	status := []string{"RUNNING", "SUCCEEDED", "SUCCEEDED", "FAILED", "FAILED", "ABORTED", "TIMED_OUT"}[g.pick(7)]
	execName := g.uuid()
	smArn := "arn:aws:states:us-east-1:123456789012:stateMachine:" + g.opts.Stack + "-" + wf
	execArn := strings.Replace(smArn, "stateMachine", "execution", 1) + ":" + execName
	day := g.opts.Start.AddDate(0, 0, g.pick(g.opts.Days))
	start := day.Add(time.Duration(g.r.Int64N(int64(24 * time.Hour)))).Truncate(time.Millisecond)
	stop := start.Add(time.Duration(30+g.pick(3600)) * time.Second)
	eventTime := stop.UTC().Format("2006-01-02T15:04:05Z")

	var granules []string
	nGranules := g.pick(11)
	if wf == "ParsePdr" || wf == "DiscoverGranules" {
		nGranules = g.pick(3)
	}
	if hi := g.opts.MaxGranules; hi > 0 {
		lo := min(max(g.opts.MinGranules, 0), hi)
		nGranules = lo + g.pick(hi-lo+1)
	}
	granuleObjs := make([]any, 0, nGranules)
	for range nGranules {
		gid := g.granuleID(c)
		granules = append(granules, gid)
		granuleObjs = append(granuleObjs, g.granule(c, gid, prov.id))
	}
	msg := g.cumulusMessage(c, wf, prov, execName, smArn, start, granuleObjs)

	var inner any // the innermost body
	kind := "dla-record"
	roll := g.r.Float64()
	switch {
	case g.opts.Outage:
		inner = g.event(status, execArn, smArn, execName, eventTime, start, stop, msg)
	case roll < 0.05:
		kind = "cumulus-message"
		cumulusStatus := "failed" // as Cumulus maps FAILED, ABORTED and TIMED_OUT
		switch status {
		case "RUNNING":
			cumulusStatus = "running"
		case "SUCCEEDED":
			cumulusStatus = "completed"
		}
		msg["meta"].(obj)["status"] = cumulusStatus
		inner = msg
	default:
		if roll < 0.17 {
			kind = "sqs-record"
		}
		inner = g.event(status, execArn, smArn, execName, eventTime, start, stop, msg)
	}

	var errText any
	if !(kind == "sqs-record" && g.chance(0.3)) { // natively redriven records carry no error
		errText = g.errorText(c, granules, prov.id, execArn)
	}
	if g.opts.Outage {
		errText = OutageError(i)
	}
	var record any = inner
	layers := 0
	if kind != "cumulus-message" {
		layers = 1 + g.pick(3)
		record = g.wrap(inner, layers, errText)
	}
	if kind == "dla-record" {
		record = g.hoist(record.(obj), inner.(obj), errText)
	}

	date := stop.UTC().Format(dla.DateLayout)
	layout := dla.Layout{Stack: g.opts.Stack}
	key := layout.DatePrefix(dla.AreaSQS, date) + dla.ArchiveFileName(execArn, g.uuid())
	switch {
	case kind == "cumulus-message":
		key = layout.AreaPrefix(dla.AreaSQS) + execName + ".json" // the oldest flat layout
	case kind == "sqs-record" && g.chance(0.4):
		key = layout.AreaPrefix(dla.AreaSQS) + execName + "-" + g.uuid() + ".json"
	}
	body := []byte(mustJSON(record))

	// Malformed objects at a fixed stride, so that even a small sample has some.
	if stride := int(1 / max(g.opts.Malformed, 1e-9)); g.opts.Malformed > 0 && i%stride == stride/2 {
		switch g.pick(3) {
		case 0:
			kind, body = "malformed-truncated", body[:len(body)*2/3]
		case 1:
			kind = "malformed-body"
			body = []byte(mustJSON(obj{"messageId": g.uuid(), "body": string(body[:len(body)/2]), "eventSource": "aws:sqs"}))
		default:
			kind, body = "malformed-empty", nil
		}
	}
	return Object{Key: key, Body: body, Kind: kind, Granules: granules}
}

func (g *g) granuleID(c collection) string {
	year := 2023 + g.pick(2)
	doy := 1 + g.pick(365)
	prodYear := year
	if g.chance(0.3) {
		prodYear++
	}
	switch c.name {
	case "MOD04_L2":
		return fmt.Sprintf("%s.A%d%03d.%02d%02d.%s.%d%03d%06d", c.prefix, year, doy, g.pick(24), 5*g.pick(12), c.version, prodYear, 1+g.pick(365), g.pick(1000000))
	}
	return fmt.Sprintf("%s.A%d%03d.h%02dv%02d.%s.%d%03d%06d", c.prefix, year, doy, g.pick(36), g.pick(18), c.version, prodYear, 1+g.pick(365), g.pick(1000000))
}

func (g *g) granule(c collection, gid, provider string) obj {
	var files []any
	for j, ext := range []string{".hdf", ".hdf.met", "_1.jpg", ".cmr.json"}[:2+g.pick(3)] {
		bucket := []string{"demo-protected", "demo-private", "demo-public", "demo-public"}[j]
		files = append(files, obj{
			"bucket": bucket, "key": c.name + "___" + c.version + "/" + gid + ext, "fileName": gid + ext,
			"size": 1000 + g.pick(90000000), "checksumType": "md5", "checksum": fmt.Sprintf("%032x", g.r.Uint64()),
			"source": "s3://lp-prod-protected/" + c.name + "." + c.version + "/" + gid + ext, "type": "data",
		})
	}
	return obj{
		"granuleId": gid, "dataType": c.name, "version": c.version, "provider": provider,
		"sync_granule_duration": g.pick(60000), "post_to_cmr_duration": g.pick(9000), "files": files,
	}
}

func (g *g) cumulusMessage(c collection, wf string, prov struct{ id, protocol, host string }, execName, smArn string, start time.Time, granules []any) obj {
	tasks := obj{}
	for j, t := range []string{"SyncGranule", "FilesToGranules", "MoveGranules", "UpdateGranulesCmrMetadataFileLinks", "PostToCmr"} {
		tasks[fmt.Sprint(j)] = obj{"name": g.opts.Stack + "-" + t, "version": "$LATEST", "arn": "arn:aws:lambda:us-east-1:123456789012:function:" + g.opts.Stack + "-" + t}
	}
	payload := obj{"granules": granules}
	if wf == "ParsePdr" || g.chance(0.1) {
		payload["pdr"] = obj{"name": fmt.Sprintf("PDN.%s.%d.PDR", c.name, g.pick(1e6)), "path": "/pdrs"}
		payload["running"], payload["completed"], payload["failed"] = []any{}, []any{"a"}, []any{}
	}
	if g.chance(0.08) && !g.opts.NoLargePayloads { // a few big messages (CMR metadata carried inline)
		blob := make([]string, 100+g.pick(1150))
		for j := range blob {
			blob[j] = fmt.Sprintf("%s.%06d.%x", c.name, j, g.r.Uint64())
		}
		payload["ancillary"] = blob
	}
	return obj{
		"cumulus_meta": obj{
			"cumulus_version": "21.0.0", "execution_name": execName, "message_source": "sfn", "state_machine": smArn,
			"system_bucket": g.opts.Stack + "-internal", "workflow_start_time": start.UnixMilli(),
		},
		"meta": obj{
			"collection": obj{"name": c.name, "version": c.version, "granuleIdExtraction": "(" + c.name + "\\..*)(\\.hdf|\\.cmr|_1\\.jpg)",
				"url_path": "{cmrMetadata.Granule.Collection.ShortName}___{cmrMetadata.Granule.Collection.VersionId}", "files": collectionFiles(c)},
			"provider":       obj{"id": prov.id, "protocol": prov.protocol, "host": prov.host, "globalConnectionLimit": 10},
			"workflow_name":  wf,
			"workflow_tasks": tasks,
			"buckets":        obj{"internal": obj{"name": g.opts.Stack + "-internal", "type": "internal"}, "protected": obj{"name": g.opts.Stack + "-protected", "type": "protected"}},
			"cmr":            obj{"clientId": g.opts.Stack + "-cumulus", "cmrEnvironment": "UAT", "provider": "LPCLOUD"},
			"stack":          g.opts.Stack,
		},
		"exception": nil,
		"payload":   payload,
	}
}

func collectionFiles(c collection) []any {
	var files []any
	for _, f := range []struct{ ext, bucket string }{{".hdf", "protected"}, {".hdf.met", "private"}, {"_1.jpg", "public"}, {".cmr.json", "public"}, {".cmr.xml", "public"}} {
		files = append(files, obj{
			"bucket": f.bucket, "regex": "^" + c.name + "\\.A[\\d]{7}\\.[\\S]{6}\\." + c.version + "\\.[\\d]{13}" + strings.ReplaceAll(f.ext, ".", "\\.") + "$",
			"sampleFileName": c.name + ".A2017025.h21v00." + c.version + ".2017034065104" + f.ext, "type": "data", "reportToEms": true,
		})
	}
	return files
}

func (g *g) event(status, execArn, smArn, execName, eventTime string, start, stop time.Time, msg obj) obj {
	detail := obj{
		"executionArn": execArn, "stateMachineArn": smArn, "name": execName, "status": status,
		"startDate": start.UnixMilli(), "input": mustJSON(msg), "inputDetails": obj{"included": true},
	}
	if status == "RUNNING" {
		detail["stopDate"], detail["output"], detail["outputDetails"] = nil, nil, nil
	} else {
		detail["stopDate"] = stop.UnixMilli()
		out := msg
		if status == "SUCCEEDED" {
			out = copyWithStatus(msg, "completed")
			detail["output"], detail["outputDetails"] = mustJSON(out), obj{"included": true}
		} else {
			detail["output"], detail["outputDetails"] = nil, nil
			detail["error"], detail["cause"] = "States.TaskFailed", "see task failure"
		}
	}
	ev := obj{
		"version": "0", "id": g.uuid(), "detail-type": "Step Functions Execution Status Change", "source": "aws.states",
		"account": "123456789012", "time": eventTime, "region": "us-east-1", "resources": []any{execArn}, "detail": detail,
	}
	if g.chance(0.05) { // the form the Cumulus docs describe, which v21 cannot read
		ev["detail"] = mustJSON(detail)
	}
	return ev
}

func copyWithStatus(msg obj, status string) obj {
	out := obj{}
	for k, v := range msg {
		out[k] = v
	}
	meta := obj{}
	for k, v := range msg["meta"].(obj) {
		meta[k] = v
	}
	meta["status"] = status
	out["meta"] = meta
	return out
}

// wrap nests inner in n SQS layers; the error rides on the innermost
// re-sent record, as sfEventSqsToDbRecords writes it.
func (g *g) wrap(inner any, n int, errText any) obj {
	body := mustJSON(inner)
	var rec obj
	for layer := n; layer >= 1; layer-- {
		upper := layer%2 == 0 && g.chance(0.7) // mixed casing in deeper layers
		rec = obj{
			"messageId": g.uuid(), "receiptHandle": "AQEB" + strings.ReplaceAll(g.uuid(), "-", ""),
			"attributes": obj{"ApproximateReceiveCount": fmt.Sprint(1 + g.pick(10)), "SentTimestamp": fmt.Sprint(1709251200000 + g.r.Int64N(1e10)),
				"SenderId": "AROAEXAMPLE:" + g.opts.Stack + "-sfEventSqsToDbRecords", "ApproximateFirstReceiveTimestamp": fmt.Sprint(1709251200000 + g.r.Int64N(1e10))},
			"messageAttributes": obj{}, "md5OfBody": fmt.Sprintf("%032x", g.r.Uint64()), "eventSource": "aws:sqs",
			"eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:" + g.opts.Stack + "-sfEventSqsToDbRecordsDeadLetterQueue", "awsRegion": "us-east-1",
		}
		if layer == n && errText != nil {
			rec["error"] = errText
		}
		if upper {
			rec["Body"] = body
		} else {
			rec["body"] = body
		}
		body = mustJSON(rec)
	}
	return rec
}

// hoist turns an SQS record into a DLA record the way Cumulus's writer does,
// using the decoder itself for the derived fields (a string detail is left
// with nulls, as Cumulus leaves it).
func (g *g) hoist(record, inner obj, errText any) obj {
	d, _ := dla.Decode([]byte(mustJSON(record)))
	out := obj{}
	for _, f := range d.Metadata {
		out[f.Name] = json.RawMessage(f.Raw)
	}
	out["body"] = mustJSON(inner)
	null := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	_, stringDetail := inner["detail"].(string)
	out["time"] = null(d.Time)
	out["error"] = errText
	for k, v := range map[string]string{"executionArn": d.ExecutionArn, "stateMachineArn": d.StateMachineArn, "status": d.Status, "collectionId": d.CollectionID, "providerId": d.ProviderID} {
		if stringDetail {
			v = ""
		}
		out[k] = null(v)
	}
	out["granules"] = nil
	if d.HasGranules && !stringDetail {
		gs := make([]any, len(d.Granules))
		for i, x := range d.Granules {
			gs[i] = null(x)
		}
		out["granules"] = gs
	}
	return out
}

func (g *g) errorText(c collection, granules []string, provider, execArn string) string {
	stack := func(fn string) string {
		return fmt.Sprintf("\n        at %s (/var/task/index.js:%d:%d)\n        at async Promise.allSettled (index 0)\n        at async writeGranulesFromMessage (/var/task/index.js:254047:19)\n        at async writeRecords (/var/task/index.js:254890:12)", fn, 200000+g.pick(60000), 1+g.pick(40))
	}
	gid := "MOD09GQ.A2024001.h00v00.006.2024002000000"
	if len(granules) > 0 {
		gid = granules[g.pick(len(granules))]
	}
	switch g.pick(8) {
	case 0, 1, 2:
		return "UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL. No records written to the database."
	case 3:
		return fmt.Sprintf(`AggregateError: %s    RecordDoesNotExist: Record in providers with identifiers {"name":"%s"} does not exist.%s`, "\n", provider, stack("_writeGranule"))
	case 4:
		return fmt.Sprintf(`AggregateError: %s    SchemaValidationError: The record has validation errors: [{"keyword":"type","dataPath":".files[0].checksum","schemaPath":"#/properties/files/items/properties/checksum/type","params":{"type":"string"},"message":"should be string"}]%s`, "\n", stack("_writeGranule"))
	case 5:
		return fmt.Sprintf("AggregateError: \n    Error: A granule already exists for granuleId: %s with collectionId: %s___%s%s", gid, collections[g.pick(len(collections))].name, c.version, stack("writeGranuleFromApi"))
	case 6:
		return "TypeError: Cannot destructure property 'startDate' of 'undefined' as it is undefined."
	}
	return fmt.Sprintf("KnexTimeoutError: Knex: Timeout acquiring a connection. The pool is probably full. Are you missing a .transacting(trx) call? (execution %s)", execArn)
}
