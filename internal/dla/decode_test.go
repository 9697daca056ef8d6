package dla

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// js marshals v to a JSON string, as a writer nesting a layer would.
func js(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type obj = map[string]any

func cumulusMessage(status string) obj {
	return obj{
		"cumulus_meta": obj{"state_machine": "arn:aws:states:us-east-1:1:stateMachine:demo-Ingest", "execution_name": "exec-1", "workflow_start_time": 1700000000000},
		"meta": obj{
			"status":     status,
			"collection": obj{"name": "MOD09GQ", "version": "006"},
			"provider":   obj{"id": "prov", "protocol": "s3", "host": "bucket"},
		},
		"payload": obj{"granules": []any{obj{"granuleId": "G1"}, obj{"granuleId": "G2"}}},
	}
}

func event(t testing.TB, status string, detailAsString bool) obj {
	detail := obj{
		"executionArn":    "arn:aws:states:us-east-1:1:execution:demo-Ingest:exec-1",
		"stateMachineArn": "arn:aws:states:us-east-1:1:stateMachine:demo-Ingest",
		"status":          status,
		"input":           js(t, cumulusMessage("running")),
		"output":          js(t, cumulusMessage("completed")),
	}
	ev := obj{"time": "2024-03-21T10:00:00Z", "source": "aws.states", "detail": detail}
	if detailAsString {
		ev["detail"] = js(t, detail)
	}
	return ev
}

// sqs wraps body in an SQS record under key ("body" or "Body").
func sqs(t testing.TB, key string, body any, meta obj) obj {
	o := obj{"messageId": "m-" + key, "eventSource": "aws:sqs"}
	for k, v := range meta {
		o[k] = v
	}
	if s, ok := body.(string); ok {
		o[key] = s
	} else {
		o[key] = js(t, body)
	}
	return o
}

func decode(t *testing.T, v any) (*Decoded, error) {
	t.Helper()
	var raw []byte
	if s, ok := v.(string); ok {
		raw = []byte(s)
	} else {
		raw = []byte(js(t, v))
	}
	return Decode(raw)
}

func TestDecodeUnwrap(t *testing.T) {
	ev := event(t, "SUCCEEDED", false)
	cases := []struct {
		name       string
		in         any
		gen        Generation
		depth      int
		status     string
		collection string
		err        string
		messageID  string
		wantErr    string // substring of a DecodeError
		problem    string // substring of a problem
	}{
		{name: "one layer body", in: sqs(t, "body", ev, nil), gen: GenSQSRecord, depth: 1, status: "SUCCEEDED", collection: "MOD09GQ___006", messageID: "m-body"},
		{name: "one layer Body", in: sqs(t, "Body", ev, nil), gen: GenSQSRecord, depth: 1, status: "SUCCEEDED", collection: "MOD09GQ___006", messageID: "m-Body"},
		{name: "two layers mixed casing", in: sqs(t, "body", sqs(t, "Body", ev, obj{"error": "inner"}), nil), gen: GenSQSRecord, depth: 2, status: "SUCCEEDED", collection: "MOD09GQ___006", err: "inner", messageID: "m-body"},
		{name: "three layers", in: sqs(t, "Body", sqs(t, "body", sqs(t, "Body", ev, nil), nil), nil), gen: GenSQSRecord, depth: 3, status: "SUCCEEDED", collection: "MOD09GQ___006", messageID: "m-Body"},
		{name: "outer error wins", in: sqs(t, "body", sqs(t, "body", ev, obj{"error": "inner"}), obj{"error": "outer"}), gen: GenSQSRecord, depth: 2, status: "SUCCEEDED", collection: "MOD09GQ___006", err: "outer", messageID: "m-body"},
		{name: "Body preferred over body", in: obj{"messageId": "x", "body": "not json", "Body": js(t, ev)}, gen: GenSQSRecord, depth: 1, status: "SUCCEEDED", collection: "MOD09GQ___006", messageID: "x"},
		{name: "null body is {}", in: obj{"messageId": "x", "body": nil}, gen: GenSQSRecord, depth: 1, messageID: "x"},
		{name: "string detail decoded", in: sqs(t, "body", event(t, "FAILED", true), nil), gen: GenSQSRecord, depth: 1, status: "FAILED", collection: "MOD09GQ___006", messageID: "m-body", problem: "detail is a JSON string"},
		{name: "invalid JSON object", in: `{"messageId": "x", "body": "{}"`, wantErr: "object is not valid JSON: truncated"},
		{name: "not an object", in: `["a"]`, wantErr: "object is a JSON array"},
		{name: "truncated after a backslash", in: `{"body":"{\\\"detail\\`, wantErr: "object is not valid JSON: truncated after 22 bytes"},
		{name: "invalid in the middle", in: `{"body": x}`, wantErr: "invalid character 'x' looking for beginning of value at byte 10"},
		{name: "empty object file", in: ``, wantErr: "object is not valid JSON: empty"},
		{name: "invalid JSON body", in: obj{"messageId": "x", "body": `{"version":"0","detail":`}, gen: GenSQSRecord, depth: 1, messageID: "x", wantErr: "layer 1 body is not valid JSON"},
		{name: "invalid JSON in second layer", in: sqs(t, "body", obj{"Body": "nope"}, nil), gen: GenSQSRecord, depth: 2, messageID: "m-body", wantErr: "layer 2 Body is not valid JSON"},
		{name: "body object not string", in: obj{"messageId": "x", "body": ev}, gen: GenSQSRecord, depth: 1, status: "SUCCEEDED", collection: "MOD09GQ___006", messageID: "x", problem: "not a string"},
		{name: "missing detail", in: sqs(t, "body", obj{"time": "2024-01-01T00:00:00Z", "other": 1}, nil), gen: GenSQSRecord, depth: 1, messageID: "m-body"},
		{name: "missing status reads input", in: sqs(t, "body", obj{"time": "2024-01-01T00:00:00Z", "detail": obj{"input": js(t, cumulusMessage("running"))}}, nil), gen: GenSQSRecord, depth: 1, collection: "MOD09GQ___006", messageID: "m-body", problem: "no status"},
		{name: "null detail", in: sqs(t, "body", obj{"detail": nil}, nil), gen: GenSQSRecord, depth: 1, messageID: "m-body", problem: "detail is a JSON null"},
		{name: "null output", in: sqs(t, "body", obj{"detail": obj{"status": "SUCCEEDED", "output": nil}}, nil), gen: GenSQSRecord, depth: 1, status: "SUCCEEDED", messageID: "m-body", problem: "detail.output is null"},
		{name: "invalid JSON input", in: sqs(t, "body", obj{"detail": obj{"status": "RUNNING", "input": "{oops"}}, nil), gen: GenSQSRecord, depth: 1, status: "RUNNING", messageID: "m-body", problem: "detail.input is not valid JSON"},
		{name: "bare cumulus message", in: cumulusMessage("completed"), gen: GenCumulusMessage, status: "SUCCEEDED", collection: "MOD09GQ___006"},
		{name: "bare event", in: ev, gen: GenEvent, status: "SUCCEEDED", collection: "MOD09GQ___006"},
		{name: "unknown object", in: obj{"hello": "world"}, gen: GenUnknown},
		{name: "dla record uses hoisted", in: obj{"messageId": "d", "body": js(t, ev), "executionArn": "arn:x:execution:sm:stored", "stateMachineArn": nil, "collectionId": "STORED___1", "granules": []any{"S1", nil}, "status": "FAILED", "time": "2024-01-02T00:00:00Z", "providerId": nil, "error": "boom"}, gen: GenDLARecord, depth: 1, status: "FAILED", collection: "STORED___1", err: "boom", messageID: "d"},
		{name: "null error is null", in: sqs(t, "body", ev, obj{"error": nil}), gen: GenSQSRecord, depth: 1, status: "SUCCEEDED", collection: "MOD09GQ___006", messageID: "m-body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := decode(t, c.in)
			if c.wantErr != "" {
				if !IsDecodeError(err) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
			} else if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if c.wantErr != "" && c.gen == "" {
				return
			}
			if d.Generation != c.gen || d.Depth != c.depth {
				t.Errorf("generation/depth = %s/%d, want %s/%d", d.Generation, d.Depth, c.gen, c.depth)
			}
			if d.Status != c.status || d.CollectionID != c.collection || d.Error != c.err || d.MessageID != c.messageID {
				t.Errorf("status=%q collection=%q error=%q messageId=%q; want %q %q %q %q",
					d.Status, d.CollectionID, d.Error, d.MessageID, c.status, c.collection, c.err, c.messageID)
			}
			if c.problem != "" && !slices.ContainsFunc(d.Problems, func(p string) bool { return strings.Contains(p, c.problem) }) {
				t.Errorf("problems = %q, want one containing %q", d.Problems, c.problem)
			}
		})
	}
}

func TestDecodeInputOutputByStatus(t *testing.T) {
	for status, want := range map[string]string{
		"RUNNING": "detail.input", "SUCCEEDED": "detail.output", "FAILED": "detail.input",
		"ABORTED": "detail.input", "TIMED_OUT": "detail.input",
	} {
		d, err := decode(t, sqs(t, "body", event(t, status, false), nil))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus := "running"
		if want == "detail.output" {
			wantStatus = "completed"
		}
		if d.MessageSource != want || !strings.Contains(d.Message, `"status":"`+wantStatus+`"`) {
			t.Errorf("%s: message from %s (%s), want %s", status, d.MessageSource, d.Message[:60], want)
		}
	}
}

func TestDecodeDerivedFields(t *testing.T) {
	msg := cumulusMessage("running")
	msg["payload"] = obj{"granules": []any{obj{"granuleId": "A"}, obj{"other": 1}, "x", obj{"granuleId": ""}}}
	msg["meta"].(obj)["provider"] = obj{"id": "p", "protocol": "s3", "host": "h", "port": "80"} // port must be a number
	msg["meta"].(obj)["collection"] = obj{"name": "N", "version": ""}                           // version must be truthy
	d, err := decode(t, sqs(t, "body", obj{"time": "2024-05-01T01:02:03Z", "detail": obj{"status": "RUNNING", "executionArn": "arn:e:execution:sm:name-9", "input": js(t, msg)}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Granules, []string{"A", "", "", ""}) || !d.HasGranules {
		t.Errorf("granules = %q", d.Granules)
	}
	if d.ProviderID != "" || d.CollectionID != "" {
		t.Errorf("provider %q collection %q, want both null", d.ProviderID, d.CollectionID)
	}
	if d.ExecutionName() != "name-9" || d.Date() != "2024-05-01" || d.Time != "2024-05-01T01:02:03Z" {
		t.Errorf("name %q date %q time %q", d.ExecutionName(), d.Date(), d.Time)
	}
	if !slices.Contains(d.Derived, "granules") || !slices.Contains(d.Derived, "status") {
		t.Errorf("derived = %q", d.Derived)
	}
}

func TestDecodeReplaceIsAProblem(t *testing.T) {
	msg := obj{"cumulus_meta": obj{"execution_name": "e"}, "replace": obj{"Bucket": "b", "Key": "k/msg.json"}}
	d, err := decode(t, sqs(t, "body", obj{"detail": obj{"status": "RUNNING", "input": js(t, msg)}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(d.Problems, func(p string) bool { return strings.Contains(p, "s3://b/k/msg.json") }) {
		t.Errorf("problems = %q", d.Problems)
	}
}

func TestDecodeDepthBound(t *testing.T) {
	s := `{}`
	for range maxLayers + 1 {
		s = `{"body":` + s + `}`
	}
	if _, err := Decode([]byte(s)); !IsDecodeError(err) {
		t.Fatalf("err = %v, want a depth error", err)
	}
}
