package dla

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"github.com/tidwall/gjson"
)

// inputMessage is a MessageFunc without AWS: the message Decode found.
func inputMessage(d *Decoded) (gjson.Result, string, error) {
	if d.Message == "" {
		return gjson.Result{}, strings.Join(d.Problems, "; "), nil
	}
	return gjson.Parse(d.Message), "", nil
}

func quoted(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// sqs wraps body as an SQS record with the given extra keys.
func sqsRecord(bodyKey, body string, extra string) string {
	return `{"messageId":"m-` + extra + `","` + bodyKey + `":` + quoted(body) + `,"eventSourceARN":"arn:q","k":"` + extra + `"}`
}

const hoistMessage = `{"cumulus_meta":{"execution_name":"e1","state_machine":"arn:aws:states:r:1:stateMachine:sm"},` +
	`"meta":{"collection":{"name":"C","version":6},"provider":{"id":"P","protocol":"s3","host":"h","port":1}},` +
	`"payload":{"granules":[{"granuleId":"g1"},{"granuleId":""},{}]}}`

func sfnEvent(detail string) string {
	return `{"version":"0","time":"2024-03-21T10:00:00Z","detail":` + detail + `}`
}

func hoisted(t *testing.T, record string) (*Hoisted, map[string]any) {
	t.Helper()
	h, err := Hoist([]byte(record), inputMessage)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(h.JSON, &m); err != nil {
		t.Fatalf("archive object is not JSON: %v\n%s", err, h.JSON)
	}
	return h, m
}

func TestHoistMergesLayersOutermostFirstAndDerivesFromTheMessage(t *testing.T) {
	detail := `{"executionArn":"arn:aws:states:r:1:execution:sm:e1","stateMachineArn":"arn:sm","status":"RUNNING","input":` + quoted(hoistMessage) + `}`
	inner := sqsRecord("body", sfnEvent(detail), "inner")
	inner = strings.Replace(inner, `{"messageId"`, `{"error":"E inner","messageId"`, 1)
	middle := sqsRecord("Body", inner, "middle")
	outer := sqsRecord("body", middle, "outer")
	h, m := hoisted(t, outer)
	want := map[string]any{
		"messageId": "m-outer", "k": "outer", "eventSourceARN": "arn:q", "error": "E inner",
		"executionArn": "arn:aws:states:r:1:execution:sm:e1", "stateMachineArn": "arn:sm", "status": "RUNNING",
		"time": "2024-03-21T10:00:00Z", "collectionId": "C___6", "providerId": "P", "granules": []any{"g1", nil, nil},
	}
	for k, v := range want {
		if quoted(m[k]) != quoted(v) {
			t.Errorf("%s = %s, want %s", k, quoted(m[k]), quoted(v))
		}
	}
	if m["body"] != sfnEvent(detail) {
		t.Errorf("body = %s", m["body"])
	}
	// JavaScript's {...inner, ...outer}: the innermost layer's keys first.
	if !strings.HasPrefix(string(h.JSON), `{"error":"E inner","messageId":"m-outer","eventSourceARN":"arn:q","k":"outer","body":`) {
		t.Errorf("key order: %.120s", h.JSON)
	}
	if got := h.Key(Layout{Stack: "s"}, "u", time.Now()); got != "s/dead-letter-archive/sqs/2024-03-21/e1-u" {
		t.Errorf("key %s", got)
	}
}

func TestHoistGivesV21sNulls(t *testing.T) {
	input := quoted(hoistMessage)
	for _, c := range []struct {
		name, record string
		nonNull      []string
	}{
		{"detail given as a string", sfnEvent(quoted(`{"status":"RUNNING","executionArn":"a","input":` + input + `}`)), []string{"time"}},
		{"status missing, no input", sfnEvent(`{"executionArn":"a"}`), []string{"time", "executionArn"}},
		{"input that is not JSON", sfnEvent(`{"executionArn":"a","status":"RUNNING","input":"{"}`), []string{"time", "executionArn", "status"}},
		{"input given as an object", sfnEvent(`{"executionArn":"a","status":"RUNNING","input":` + hoistMessage + `}`), []string{"time", "executionArn", "status"}},
		{"output null", sfnEvent(`{"executionArn":"a","status":"SUCCEEDED","input":` + input + `,"output":null}`), []string{"time", "executionArn", "status"}},
		{"a bare Cumulus message", hoistMessage, nil},
		{"an unrelated object", `{"Records":[],"n":1}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, m := hoisted(t, sqsRecord("body", c.record, "x"))
			for _, k := range []string{"executionArn", "stateMachineArn", "status", "time", "collectionId", "providerId", "granules", "error"} {
				v, ok := m[k]
				if !ok {
					t.Errorf("%s missing", k)
				}
				if isSet := v != nil; isSet != strings.Contains(strings.Join(c.nonNull, ","), k) {
					t.Errorf("%s = %v, want it set only if in %v", k, v, c.nonNull)
				}
			}
			body, _ := jsontext.Stringify(c.record)
			if m["body"] != body || h.Raw {
				t.Errorf("body %v raw %v", m["body"], h.Raw)
			}
		})
	}
}

func TestHoistArchivesAnUnparseableRecordAsItCame(t *testing.T) {
	deep := strings.Repeat("[", jsontext.MaxDepth+1) + strings.Repeat("]", jsontext.MaxDepth+1)
	for _, c := range []struct{ name, record, reason string }{
		{"body not JSON", sqsRecord("body", `{"version":"0","time":`, "x"), "layer 1 body is not valid JSON"},
		{"inner body not JSON", sqsRecord("body", sqsRecord("Body", "nope", "in"), "x"), "layer 2 Body is not valid JSON"},
		{"body too deep", sqsRecord("body", deep, "x"), "nested deeper than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, m := hoisted(t, c.record)
			if !h.Raw || !strings.Contains(m[ArchiveErrorKey].(string), c.reason) || h.MessageID != "m-x" {
				t.Fatalf("raw %v, archiveError %v, id %q", h.Raw, m[ArchiveErrorKey], h.MessageID)
			}
			delete(m, ArchiveErrorKey)
			var orig map[string]any
			_ = json.Unmarshal([]byte(c.record), &orig)
			if quoted(m) != quoted(orig) {
				t.Errorf("stored %s, want the record %s", quoted(m), quoted(orig))
			}
			if got := h.Key(Layout{Stack: "s"}, "u", time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)); got != "s/dead-letter-archive/sqs/2026-01-02/unknown-u" {
				t.Errorf("key %s", got)
			}
			d, _ := Decode(h.JSON)
			if !strings.Contains(strings.Join(d.Problems, ";"), "archived as it came") {
				t.Errorf("Decode does not report the archive error: %v", d.Problems)
			}
		})
	}
}

func TestHoistKeepsARecordThatIsNoObjectAsAString(t *testing.T) {
	deep := `{"messageId":"m","x":` + strings.Repeat("[", jsontext.MaxDepth+1) + strings.Repeat("]", jsontext.MaxDepth+1) + `}`
	for _, rec := range []string{`[1,2]`, `not json`, deep} {
		h, m := hoisted(t, rec)
		if !h.Raw || m["record"] != rec || m[ArchiveErrorKey] == "" {
			t.Errorf("%.40s: raw %v, stored %.100s", rec, h.Raw, h.JSON)
		}
	}
}

func TestHoistReturnsTheMessageFuncsError(t *testing.T) {
	boom := errors.New("S3 is down")
	rec := sqsRecord("body", sfnEvent(`{"status":"FAILED","input":"{}"}`), "x")
	if _, err := Hoist([]byte(rec), func(*Decoded) (gjson.Result, string, error) { return gjson.Result{}, "", boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

func TestMessageUUIDIsStablePerMessageAndQueue(t *testing.T) {
	a := MessageUUID("arn:q1", "m1")
	if a != MessageUUID("arn:q1", "m1") || a == MessageUUID("arn:q2", "m1") || a == MessageUUID("arn:q1", "m2") {
		t.Fatal("not one UUID per (queue, message)")
	}
	if len(a) != 36 || a[14] != '5' || !strings.ContainsRune("89ab", rune(a[19])) {
		t.Errorf("%s is not a version 5 UUID", a)
	}
}
