package dla

// decodeReference is the decoder as it was before the single-pass rewrite
// (decode.go at 1d56769), kept unchanged with its helpers renamed (ref...):
// the differential tests check that Decode returns exactly what it returns.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"github.com/tidwall/gjson"
)

// decodeReference decodes one archive object of any generation. It never panics; an
// object that is not a JSON object, whose body layers are not valid JSON,
// or that nests deeper than MaxDepth (in any of its layers, or in the
// detail or Cumulus message it holds as a JSON string), yields a
// *DecodeError together with what could be decoded.
//
// Each object level is walked once (gjson's Get would rescan the large
// escaped body strings for every key).
func decodeReference(raw []byte) (*Decoded, error) {
	d := &Decoded{}
	d.Size = int64(len(raw))
	if rest, ok := bytes.CutPrefix(raw, utf8BOM); ok {
		// Editors on Windows write one; JSON parsers reject it.
		raw = rest
		d.refProblem("starts with a UTF-8 byte-order mark (ignored)")
	}
	if jsontext.TooDeepBytes(raw) {
		return d, decodeErrorf("object is %s", jsontext.DepthReason)
	}
	if !gjson.ValidBytes(raw) {
		return d, decodeErrorf("object is not valid JSON: %s", refJsonSyntaxReason(raw))
	}
	top := gjson.ParseBytes(raw)
	if !top.IsObject() {
		return d, decodeErrorf("object is a JSON %s, not an object", refJsonKind(top))
	}

	// The unwrap loop: while the value has a body or Body key, keep the other
	// keys as metadata (outer layers win) and descend into the body.
	var topFields, innerFields []Field
	cur := top
	for {
		layer, body, isSQS := refSplitLayer(cur)
		if len(d.Layers) == 0 {
			topFields = layer.Metadata
			if v := refFieldValue(topFields, ArchiveErrorKey); v.Type == gjson.String {
				d.refProblem("archived as it came by the DLA writer: %s", v.Str)
			}
		}
		if !isSQS {
			innerFields = layer.Metadata // the innermost object, already walked
			break
		}
		if len(d.Layers) >= maxLayers {
			return d, decodeErrorf("more than %d nested body layers", maxLayers)
		}
		d.Layers = append(d.Layers, layer)
		for _, f := range layer.Metadata {
			d.refAddMetadata(f)
		}
		n := len(d.Layers)
		switch body.Type {
		case gjson.Null:
			cur = gjson.Parse("{}")
		case gjson.String:
			if jsontext.TooDeep(body.Str) {
				d.Depth = n
				d.refFillFromMetadata()
				d.Generation = refGenerationOf(refIsDLARecord(topFields), n, false, false)
				return d, decodeErrorf("layer %d %s is %s", n, layer.BodyKey, jsontext.DepthReason)
			}
			if !gjson.Valid(body.Str) {
				d.Depth = n
				d.refFillFromMetadata()
				d.Generation = refGenerationOf(refIsDLARecord(topFields), n, false, false)
				return d, decodeErrorf("layer %d %s is not valid JSON: %s", n, layer.BodyKey, refJsonSyntaxReason([]byte(body.Str)))
			}
			cur = gjson.Parse(body.Str)
		default:
			// Cumulus would fail here (it parses String(body)); the value is
			// already JSON, so use it.
			d.refProblem("layer %d %s is a JSON %s, not a string", n, layer.BodyKey, refJsonKind(body))
			cur = body
		}
	}
	d.Depth = len(d.Layers)
	d.Event = cur.Raw
	d.refFillFromMetadata()
	detail, cumulusMeta := refFieldValue(innerFields, "detail"), refFieldValue(innerFields, "cumulus_meta")
	dlaRecord := refIsDLARecord(topFields)
	d.Generation = refGenerationOf(dlaRecord, len(d.Layers), detail.Exists(), cumulusMeta.Exists())

	derived, err := d.refDerive(cur, detail, cumulusMeta, refFieldValue(innerFields, "time"))
	if dlaRecord {
		d.refApplyHoisted(topFields, derived)
	} else {
		d.refApplyDerived(derived)
	}
	return d, err
}

// refIsDLARecord: the DLA writer adds its hoisted keys to every record.
func refIsDLARecord(top []Field) bool {
	n := 0
	for _, f := range top {
		switch f.Name {
		case "executionArn", "collectionId", "granules":
			n++
		}
	}
	return n == 3
}

// refPick returns the values of the named keys of an object in one pass (a
// missing key gives a Result that does not exist).
func refPick(v gjson.Result, names ...string) []gjson.Result {
	out := make([]gjson.Result, len(names))
	if !v.IsObject() {
		return out
	}
	v.ForEach(func(k, val gjson.Result) bool {
		for i, n := range names {
			if k.Str == n && !out[i].Exists() {
				out[i] = val
			}
		}
		return true
	})
	return out
}

// refFieldValue is the value of a key among fields already walked (a missing
// key gives a Result that does not exist).
func refFieldValue(fields []Field, name string) gjson.Result {
	for _, f := range fields {
		if f.Name == name {
			return gjson.Parse(f.Raw)
		}
	}
	return gjson.Result{}
}

func refGenerationOf(refIsDLARecord bool, layers int, hasDetail, hasCumulusMeta bool) Generation {
	switch {
	case refIsDLARecord:
		return GenDLARecord
	case layers > 0:
		return GenSQSRecord
	case hasDetail:
		return GenEvent
	case hasCumulusMeta:
		return GenCumulusMessage
	default:
		return GenUnknown
	}
}

// refSplitLayer walks an object once: its keys other than body/Body, and its
// body (Body preferred, as in Cumulus's parseSQSMessageBody). isSQS mirrors
// Cumulus's isSQSRecordLike: an object with a body or Body key.
func refSplitLayer(v gjson.Result) (layer Layer, body gjson.Result, isSQS bool) {
	if !v.IsObject() {
		return layer, body, false
	}
	var upper, lower gjson.Result
	var hasUpper, hasLower bool
	v.ForEach(func(k, val gjson.Result) bool {
		switch k.Str {
		case "Body":
			upper, hasUpper = val, true
		case "body":
			lower, hasLower = val, true
		default:
			layer.Metadata = append(layer.Metadata, Field{Name: k.Str, Raw: val.Raw})
		}
		return true
	})
	switch {
	case hasUpper:
		layer.BodyKey = "Body"
		return layer, upper, true
	case hasLower:
		layer.BodyKey = "body"
		return layer, lower, true
	}
	return layer, body, false
}

func (d *Decoded) refAddMetadata(f Field) {
	for _, have := range d.Metadata {
		if have.Name == f.Name {
			return // the outer layer's value wins
		}
	}
	d.Metadata = append(d.Metadata, f)
}

// refFillFromMetadata sets the fields that come from the SQS metadata.
func (d *Decoded) refFillFromMetadata() {
	if v := refFieldValue(d.Metadata, "messageId"); v.Exists() {
		d.MessageID = refScalarString(v)
	} else {
		d.MessageID = refScalarString(refFieldValue(d.Metadata, "MessageId"))
	}
	if v := refFieldValue(d.Metadata, "error"); v.Exists() && v.Type != gjson.Null {
		d.Error, d.HasError = refScalarString(v), true
	}
}

func (d *Decoded) refProblem(format string, args ...any) {
	d.Problems = append(d.Problems, fmt.Sprintf(format, args...))
}

// refDerivedFields are the fields this tool derives from the innermost body.
type refDerivedFields struct {
	executionArn, stateMachineArn, status, time, collectionID, providerID string
	granules                                                              []string
	hasGranules                                                           bool
}

// refDerive computes the hoisted fields from the innermost object, the way
// Cumulus's hoistCumulusMessageDetails does, but also decodes a detail given
// as a JSON string, and reads bare Cumulus messages. It makes no AWS calls:
// a FAILED execution's message is its input (Cumulus would re-read the failed
// step's output from the execution history). The error is a *DecodeError
// for a detail or message string nested deeper than MaxDepth.
func (d *Decoded) refDerive(inner, detail, cumulusMeta, eventTime gjson.Result) (refDerivedFields, error) {
	var f refDerivedFields
	if !inner.IsObject() {
		return f, nil
	}
	if detail.Exists() {
		f.time = refTruthyString(eventTime)
		switch {
		case detail.IsObject():
		case detail.Type == gjson.String && jsontext.TooDeep(detail.Str):
			return f, decodeErrorf("detail is a JSON string %s", jsontext.DepthReason)
		case detail.Type == gjson.String && gjson.Valid(detail.Str) && gjson.Parse(detail.Str).IsObject():
			d.refProblem("detail is a JSON string, not an object (Cumulus v21 derives nothing from it; decoded here)")
			detail = gjson.Parse(detail.Str)
		case detail.Type == gjson.String:
			d.refProblem("detail is a string that is not a JSON object")
			return f, nil
		default:
			d.refProblem("detail is a JSON %s, not an object", refJsonKind(detail))
			return f, nil
		}
		d.Detail = detail.Raw
		df := refPick(detail, "executionArn", "stateMachineArn", "status", "input", "output")
		f.executionArn = refTruthyString(df[0])
		f.stateMachineArn = refTruthyString(df[1])
		f.status = refTruthyString(df[2])

		source := "input"
		switch f.status {
		case "RUNNING":
		case "SUCCEEDED":
			source = "output"
		case "":
			d.refProblem("detail has no status; reading detail.input as Cumulus does for failed executions")
		}
		d.MessageSource = "detail." + source
		msg := df[3]
		if source == "output" {
			msg = df[4]
		}
		switch {
		case msg.Type == gjson.String && jsontext.TooDeep(msg.Str):
			return f, decodeErrorf("detail.%s is a JSON string %s", source, jsontext.DepthReason)
		case msg.Type == gjson.String && gjson.Valid(msg.Str):
			msg = gjson.Parse(msg.Str)
		case msg.Type == gjson.String:
			d.refProblem("detail.%s is not valid JSON: %s", source, refJsonSyntaxReason([]byte(msg.Str)))
			return f, nil
		case !msg.Exists() && source == "input" && f.status != "RUNNING":
			msg = gjson.Parse("{}") // Cumulus's failed branch uses {} when input is absent
		case msg.Type == gjson.Null || !msg.Exists():
			d.refProblem("detail.%s is null (EventBridge leaves it out when the payload is too large)", source)
			return f, nil
		}
		if !msg.IsObject() {
			d.refProblem("detail.%s is a JSON %s, not a Cumulus message", source, refJsonKind(msg))
			return f, nil
		}
		d.Message = msg.Raw
		d.refDeriveFromMessage(msg, &f)
		return f, nil
	}
	if cumulusMeta.Exists() {
		d.Message, d.MessageSource = inner.Raw, "body"
		cm := cumulusMeta
		f.stateMachineArn = refTruthyString(cm.Get("state_machine"))
		if name := refTruthyString(cm.Get("execution_name")); name != "" && f.stateMachineArn != "" {
			f.executionArn = strings.Replace(f.stateMachineArn, "stateMachine", "execution", 1) + ":" + name
		}
		f.status = refSfnStatusOf(refTruthyString(refPick(refPick(inner, "meta")[0], "status")[0]))
		d.refDeriveFromMessage(inner, &f)
	}
	return f, nil
}

// refDeriveFromMessage reads collectionId, granules and providerId from a
// Cumulus message, with the rules of Cumulus's DLA writer.
func (d *Decoded) refDeriveFromMessage(msg gjson.Result, f *refDerivedFields) {
	if r := refPick(msg, "replace")[0]; r.IsObject() {
		d.refProblem("the Cumulus message is held in S3 (replace: s3://%s/%s); fields from the partial message only",
			r.Get("Bucket").String(), r.Get("Key").String())
	}
	coll, prov, grans := refMessageFields(msg)
	f.collectionID, f.providerID = refScalarString(gjson.Parse(coll)), refScalarString(gjson.Parse(prov))
	if gs := gjson.Parse(grans); gs.IsArray() {
		f.hasGranules = true
		f.granules = []string{}
		gs.ForEach(func(_, g gjson.Result) bool {
			f.granules = append(f.granules, refScalarString(g))
			return true
		})
	}
}

// refApplyHoisted takes each hoisted field as stored, and falls back to the
// derived value only where the record holds null.
func (d *Decoded) refApplyHoisted(topFields []Field, f refDerivedFields) {
	for _, fl := range topFields {
		if slices.Contains(hoistedKeys, fl.Name) {
			d.Hoisted = append(d.Hoisted, fl)
		}
	}
	stored := func(key string) gjson.Result { return refFieldValue(topFields, key) }
	choose := func(name string, stored gjson.Result, derived string) string {
		if s := refScalarString(stored); stored.Type != gjson.Null && stored.Exists() && s != "" {
			return s
		}
		if derived != "" {
			d.Derived = append(d.Derived, name)
		}
		return derived
	}
	d.ExecutionArn = choose("execution_arn", stored("executionArn"), f.executionArn)
	d.StateMachineArn = choose("state_machine_arn", stored("stateMachineArn"), f.stateMachineArn)
	d.Status = choose("status", stored("status"), f.status)
	d.Time = choose("time", stored("time"), f.time)
	d.CollectionID = choose("collection_id", stored("collectionId"), f.collectionID)
	d.ProviderID = choose("provider_id", stored("providerId"), f.providerID)
	if g := stored("granules"); g.IsArray() {
		d.HasGranules = true
		d.Granules = []string{}
		g.ForEach(func(_, v gjson.Result) bool {
			d.Granules = append(d.Granules, refScalarString(v))
			return true
		})
	} else if f.hasGranules {
		d.Granules, d.HasGranules = f.granules, true
		d.Derived = append(d.Derived, "granules")
	}
}

// refApplyDerived sets every field from the body: the object carried none.
func (d *Decoded) refApplyDerived(f refDerivedFields) {
	d.ExecutionArn, d.StateMachineArn, d.Status, d.Time = f.executionArn, f.stateMachineArn, f.status, f.time
	d.CollectionID, d.ProviderID = f.collectionID, f.providerID
	d.Granules, d.HasGranules = f.granules, f.hasGranules
	for _, x := range []struct {
		name string
		set  bool
	}{
		{"execution_arn", f.executionArn != ""}, {"state_machine_arn", f.stateMachineArn != ""},
		{"status", f.status != ""}, {"time", f.time != ""}, {"collection_id", f.collectionID != ""},
		{"provider_id", f.providerID != ""}, {"granules", f.hasGranules},
	} {
		if x.set {
			d.Derived = append(d.Derived, x.name)
		}
	}
}

// refSfnStatusOf maps a Cumulus status back to the Step Functions status.
func refSfnStatusOf(cumulusStatus string) string {
	switch cumulusStatus {
	case "running":
		return "RUNNING"
	case "completed":
		return "SUCCEEDED"
	case "failed":
		return "FAILED"
	}
	return strings.ToUpper(cumulusStatus)
}

// refTruthyString returns the value as JavaScript's `x || null` would keep it:
// "" for null, false, 0, "" and missing; the text otherwise.
func refTruthyString(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Number:
		if v.Num == 0 {
			return ""
		}
		return v.Raw
	case gjson.True:
		return "true"
	case gjson.JSON:
		return v.Raw
	}
	return ""
}

// refScalarString is a string value as is, other JSON values as their text.
func refScalarString(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Null:
		return ""
	}
	return v.Raw
}

func refJsonKind(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return "string"
	case gjson.Number:
		return "number"
	case gjson.True, gjson.False:
		return "boolean"
	case gjson.Null:
		return "null"
	}
	if v.IsArray() {
		return "array"
	}
	return "object"
}

// refJsonSyntaxReason explains why raw is not valid JSON (only on the error path).
func refJsonSyntaxReason(raw []byte) string {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return "empty"
	}
	var v json.RawMessage
	err := json.Unmarshal(raw, &v)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se) && (se.Error() == "unexpected end of JSON input" || se.Offset >= int64(len(raw))):
		return fmt.Sprintf("truncated after %d bytes", len(raw))
	case errors.As(err, &se):
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	case err != nil:
		return err.Error()
	}
	return "invalid"
}

// refMessageFields are the fields Cumulus's DLA writer reads from a Cumulus
// message, as JSON texts ("null" when absent):
//   - collectionId: meta.collection name + "___" + version, when both are
//     truthy;
//   - providerId: meta.provider.id, when the provider has string id,
//     protocol and host and a numeric port if any;
//   - granules: payload.granules mapped to each granuleId (null when
//     falsy), when it is an array.
func refMessageFields(msg gjson.Result) (collectionID, providerID, granules string) {
	collectionID, providerID, granules = "null", "null", "null"
	top := refPick(msg, "meta", "payload")
	mf := refPick(top[0], "collection", "provider")
	coll := refPick(mf[0], "name", "version")
	if jsTruthy(coll[0]) && jsTruthy(coll[1]) {
		collectionID = jsontext.QuoteJS(jsStringOf(coll[0]) + "___" + jsStringOf(coll[1]))
	}
	if p := refPick(mf[1], "id", "protocol", "host", "port"); mf[1].IsObject() &&
		p[0].Type == gjson.String && p[1].Type == gjson.String && p[2].Type == gjson.String &&
		(!p[3].Exists() || p[3].Type == gjson.Number) {
		providerID = truthyRaw(p[0])
	}
	if gs := refPick(top[1], "granules")[0]; gs.IsArray() {
		var b strings.Builder
		b.WriteByte('[')
		gs.ForEach(func(_, g gjson.Result) bool {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(truthyRaw(refPick(g, "granuleId")[0]))
			return true
		})
		b.WriteByte(']')
		granules = b.String()
	}
	return collectionID, providerID, granules
}
