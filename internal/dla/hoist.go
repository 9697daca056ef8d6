package dla

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"github.com/tidwall/gjson"
)

// MessageFunc gives the Cumulus message of a decoded Step Functions event,
// as Cumulus's getCumulusMessageFromExecutionEvent does (the CLI's and the
// processors' recovery.Unwrap: input or output by status, the failed step's
// output from the execution history, a `replace` payload read from S3).
// When there is none, msg does not exist and why says why: Cumulus's hoist
// would have caught an exception and derived nothing from the message. A
// non-nil error is a
// failure a retry may cure (S3 or Step Functions unavailable); Hoist
// returns it as it is.
type MessageFunc func(d *Decoded) (msg gjson.Result, why string, err error)

// Hoisted is one DLQ record turned into the DLA record Cumulus's writer
// stores.
type Hoisted struct {
	// JSON is the archive object: the DLA record as JSON.stringify writes
	// it, or, when Raw, the record as it came with an archiveError key.
	JSON []byte
	// Raw: the record could not be parsed and is archived as it came.
	Raw bool
	// Reason says why the record is archived Raw, or why no Cumulus message
	// was derived from it ("" otherwise).
	Reason string
	// MessageID and EventSourceARN identify the DLQ message ("" when absent).
	MessageID, EventSourceARN string
	// ExecutionArn and Time are the hoisted fields the key is made of, as
	// text ("" for null).
	ExecutionArn, Time string
}

// ArchiveErrorKey is the key added to a record archived as it came because
// it could not be parsed. Cumulus's readers ignore keys they do not know;
// Decode reports it as a problem.
const ArchiveErrorKey = "archiveError"

// Hoist turns one record of a DLQ event (the JSON of one element of
// event.Records) into the DLA record Cumulus v21's
// hoistCumulusMessageDetails makes:
//   - every key of every SQS layer but body/Body, the outermost value
//     winning (JavaScript's {...inner, ...outer}, key order included);
//   - body: the innermost object, re-serialised (Stringify);
//   - error: the merged metadata's error, else null;
//   - for an EventBridge event (an object with a detail key): executionArn,
//     stateMachineArn and status from detail, time from the event; and
//     collectionId, providerId and granules from the Cumulus message that
//     message gives (MessageFields). A detail that is not an object gives
//     nulls (v21 does not decode a detail given as a string), as does an
//     input or output that is not a JSON string.
//
// A record whose layers cannot be parsed (not JSON, nested deeper than
// jsontext.MaxDepth or than 64 layers) is returned Raw: the record as it
// came, with ArchiveErrorKey saying why, where v21 throws and the batch is
// retried until the DLQ's retention drops it. A nil message derives no message
// fields.
func Hoist(raw []byte, message MessageFunc) (*Hoisted, error) {
	h := &Hoisted{}
	top := gjson.ParseBytes(raw)
	if !jsontext.TooDeepBytes(raw) && top.IsObject() {
		ids := pick(top, "messageId", "eventSourceARN")
		h.MessageID, h.EventSourceARN = scalarString(ids[0]), scalarString(ids[1])
	}
	d, err := Decode(raw)
	if d.Event == "" {
		reason := "the record is not a JSON object"
		if err != nil {
			reason = err.Error()
		}
		h.archiveRaw(raw, reason)
		return h, nil
	}
	body, serr := jsontext.Stringify(d.Event)
	if serr != nil {
		h.archiveRaw(raw, serr.Error())
		return h, nil
	}

	var out strings.Builder
	out.WriteByte('{')
	// {...metadata}: the innermost layer's keys first; a later (outer) key
	// takes the place of its first appearance and wins (Stringify).
	errorRaw := "null"
	if len(d.Layers) == 0 {
		gjson.Parse(d.Event).ForEach(func(k, v gjson.Result) bool {
			writeMember(&out, jsontext.QuoteJS(k.Str), v.Raw)
			return true
		})
		if e := pick(gjson.Parse(d.Event), "error")[0]; e.Exists() {
			errorRaw = e.Raw
		}
	} else {
		for i := len(d.Layers) - 1; i >= 0; i-- {
			for _, f := range d.Layers[i].Metadata {
				writeMember(&out, jsontext.QuoteJS(f.Name), f.Raw)
			}
		}
		if e := fieldValue(d.Metadata, "error"); e.Exists() {
			errorRaw = e.Raw
		}
	}

	f, err := h.derive(d, message)
	if err != nil {
		return nil, err
	}
	writeMember(&out, `"body"`, jsontext.QuoteJS(body))
	for _, m := range []struct{ k, v string }{
		{"collectionId", f.collectionID}, {"providerId", f.providerID}, {"granules", f.granules},
		{"executionArn", f.executionArn}, {"stateMachineArn", f.stateMachineArn}, {"status", f.status},
		{"time", f.time}, {"error", errorRaw},
	} {
		writeMember(&out, jsontext.QuoteJS(m.k), m.v)
	}
	out.WriteByte('}')
	js, err := jsontext.Stringify(out.String())
	if err != nil { // cannot happen: every part was parsed above
		h.archiveRaw(raw, err.Error())
		return h, nil
	}
	h.JSON = []byte(js)
	h.ExecutionArn = jsStringOf(gjson.Parse(f.executionArn))
	h.Time = eventTimeText(gjson.Parse(f.time))
	return h, nil
}

func writeMember(b *strings.Builder, quotedKey, raw string) {
	if b.Len() > 1 {
		b.WriteByte(',')
	}
	b.WriteString(quotedKey)
	b.WriteByte(':')
	b.WriteString(raw)
}

// hoistedValues are the derived fields as JSON texts.
type hoistedValues struct {
	executionArn, stateMachineArn, status, time string
	collectionID, providerID, granules          string
}

func (h *Hoisted) derive(d *Decoded, message MessageFunc) (hoistedValues, error) {
	f := hoistedValues{"null", "null", "null", "null", "null", "null", "null"}
	inner := gjson.Parse(d.Event)
	ev := pick(inner, "detail", "time")
	detail := ev[0]
	if !detail.Exists() {
		return f, nil // not an EventBridge event: v21 derives nothing
	}
	f.time = truthyRaw(ev[1])
	if !detail.IsObject() {
		h.Reason = "detail is not a JSON object (Cumulus v21 derives nothing from it)"
		return f, nil
	}
	df := pick(detail, "executionArn", "stateMachineArn", "status", "input", "output")
	f.executionArn, f.stateMachineArn, f.status = truthyRaw(df[0]), truthyRaw(df[1]), truthyRaw(df[2])
	// getCumulusMessageFromExecutionEvent JSON-parses detail.input (output
	// when SUCCEEDED); anything but a string there makes it throw.
	src, field := "input", df[3]
	if df[2].Type == gjson.String && df[2].Str == "SUCCEEDED" {
		src, field = "output", df[4]
	}
	running := df[2].Type == gjson.String && (df[2].Str == "RUNNING" || df[2].Str == "SUCCEEDED")
	if field.Type != gjson.String && (running || field.Exists()) {
		h.Reason = fmt.Sprintf("detail.%s is not a JSON string", src)
		return f, nil
	}
	if message == nil {
		h.Reason = "no Cumulus message: no MessageFunc given"
		return f, nil
	}
	msg, why, err := message(d)
	if err != nil {
		return f, err
	}
	if !msg.Exists() {
		h.Reason = "no Cumulus message: " + why
		return f, nil
	}
	f.collectionID, f.providerID, f.granules = MessageFields(msg)
	return f, nil
}

// MessageFields are the fields Cumulus's DLA writer reads from a Cumulus
// message, as JSON texts ("null" when absent):
//   - collectionId: meta.collection name + "___" + version, when both are
//     truthy;
//   - providerId: meta.provider.id, when the provider has string id,
//     protocol and host and a numeric port if any;
//   - granules: payload.granules mapped to each granuleId (null when
//     falsy), when it is an array.
func MessageFields(msg gjson.Result) (collectionID, providerID, granules string) {
	collectionID, providerID, granules = "null", "null", "null"
	top := pick(msg, "meta", "payload")
	mf := pick(top[0], "collection", "provider")
	coll := pick(mf[0], "name", "version")
	if jsTruthy(coll[0]) && jsTruthy(coll[1]) {
		collectionID = jsontext.QuoteJS(jsStringOf(coll[0]) + "___" + jsStringOf(coll[1]))
	}
	if p := pick(mf[1], "id", "protocol", "host", "port"); mf[1].IsObject() &&
		p[0].Type == gjson.String && p[1].Type == gjson.String && p[2].Type == gjson.String &&
		(!p[3].Exists() || p[3].Type == gjson.Number) {
		providerID = truthyRaw(p[0])
	}
	if gs := pick(top[1], "granules")[0]; gs.IsArray() {
		var b strings.Builder
		b.WriteByte('[')
		gs.ForEach(func(_, g gjson.Result) bool {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(truthyRaw(pick(g, "granuleId")[0]))
			return true
		})
		b.WriteByte(']')
		granules = b.String()
	}
	return collectionID, providerID, granules
}

// archiveRaw keeps the record as it came, with why, under ArchiveErrorKey.
// The key is added to the record's text, which is kept byte for byte; a
// text that is not a JSON object (or nests too deep to check that it is
// one) is kept as a JSON string under "record".
func (h *Hoisted) archiveRaw(raw []byte, reason string) {
	h.Raw, h.Reason = true, reason
	h.ExecutionArn, h.Time = "", ""
	member := jsontext.QuoteJS(ArchiveErrorKey) + ":" + jsontext.QuoteJS(reason)
	t := bytes.TrimSpace(bytes.TrimPrefix(raw, utf8BOM))
	if len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}' && jsontext.ValidBytes(t) {
		inside := bytes.TrimSpace(t[1 : len(t)-1])
		var b bytes.Buffer
		b.WriteByte('{')
		if len(inside) > 0 {
			b.Write(inside)
			b.WriteByte(',')
		}
		b.WriteString(member)
		b.WriteByte('}')
		h.JSON = b.Bytes()
		return
	}
	h.JSON = []byte("{" + jsontext.QuoteJS("record") + ":" + jsontext.QuoteJS(string(raw)) + "," + member + "}")
}

// truthyRaw is JavaScript's `x || null` as JSON text.
func truthyRaw(v gjson.Result) string {
	if !jsTruthy(v) {
		return "null"
	}
	return v.Raw
}

// jsTruthy is JavaScript truthiness of a JSON value.
func jsTruthy(v gjson.Result) bool {
	switch v.Type {
	case gjson.String:
		return v.Str != ""
	case gjson.Number:
		return v.Num != 0
	case gjson.True, gjson.JSON:
		return true
	}
	return false
}

// jsStringOf is String(x) for the values Cumulus concatenates ("" for null).
func jsStringOf(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Number:
		return jsontext.JSNumber(v.Num)
	case gjson.Null:
		return ""
	}
	return v.Raw
}

// eventTimeText is the hoisted time as the key's date sees it: a string as
// is, an epoch-ms number (moment.utc accepts one) as RFC 3339.
func eventTimeText(v gjson.Result) string {
	if v.Type == gjson.Number {
		return time.UnixMilli(int64(v.Num)).UTC().Format(time.RFC3339Nano)
	}
	return jsStringOf(v)
}

// messageNamespace is the namespace of MessageUUID's name-based UUIDs.
var messageNamespace = [16]byte{0x6c, 0x1e, 0x4f, 0x0a, 0x9b, 0x52, 0x4d, 0x1f, 0xa4, 0x7e, 0x3c, 0x5d, 0x20, 0x8b, 0x91, 0x6e}

// MessageUUID is a name-based UUID (RFC 9562 version 5) of one SQS
// message: its queue's ARN and its message id. SQS keeps a message's id
// across receives, so a batch delivered again gives the same UUIDs, and so
// the same archive keys; two queues never share one.
func MessageUUID(eventSourceARN, messageID string) string {
	h := sha1.New()
	h.Write(messageNamespace[:])
	h.Write([]byte(eventSourceARN + "\n" + messageID))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Key is where the record is archived under l: the event date's sqs/
// folder (now's date without a valid time) and the execution name
// ("unknown" without one), a dash and uuid: Cumulus's getDLAKey, with the
// UUID chosen by the caller.
func (h *Hoisted) Key(l Layout, uuid string, now time.Time) string {
	return l.DatePrefix(AreaSQS, DatePartition(h.Time, now)) + ArchiveFileName(h.ExecutionArn, uuid)
}
