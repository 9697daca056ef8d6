package dla

import (
	"strings"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"github.com/tidwall/gjson"
)

// The fields of a record derived from its innermost body (derive), and
// how they are taken: over the hoisted fields a DLA record holds
// (applyHoisted), or alone (applyDerived).

// innerLayer is the innermost layer as the unwrap loop leaves it: what
// derive reads the fields from.
type innerLayer struct {
	st     *decodeState // derive unescapes into st.buf and scans with st.msg
	ls     *layerScan   // the scan of data
	data   []byte       // the layer's text, as scanned (ls's offsets index it)
	text   string       // the same text, as the Decoded keeps it
	value  gjson.Result // text, parsed
	fields []Field      // its members, when it is an object
	// detail and cumulus_meta are its members of those names (absent: they
	// do not exist).
	detail, cumulusMeta gjson.Result
}

// derivedFields are the fields this tool derives from the innermost body.
type derivedFields struct {
	executionArn, stateMachineArn, status, time, collectionID, providerID string
	granules                                                              []string
	hasGranules                                                           bool
}

// derive computes the hoisted fields from the innermost object, the way
// Cumulus's hoistCumulusMessageDetails does, but also decodes a detail given
// as a JSON string, and reads bare Cumulus messages. It makes no AWS calls:
// a FAILED execution's message is its input (Cumulus would re-read the failed
// step's output from the execution history). The error is a *DecodeError
// for a detail or message string nested deeper than jsontext.MaxDepth.
func (d *Decoded) derive(in *innerLayer) (derivedFields, error) {
	var f derivedFields
	switch {
	case !in.value.IsObject():
		return f, nil
	case in.detail.Exists():
		err := d.deriveFromDetail(in, &f)
		return f, err
	case in.cumulusMeta.Exists():
		d.deriveFromBareMessage(in, &f)
	}
	return f, nil
}

// deriveFromDetail reads an EventBridge event: the time, the execution's
// ARNs and status from its detail, and the rest from the Cumulus message
// in detail.input or detail.output (by status).
func (d *Decoded) deriveFromDetail(in *innerLayer, f *derivedFields) error {
	f.time = truthyString(fieldValue(in.fields, "time"))
	indexed := in.detail.IsObject() // its members were found by the layer's scan
	detail, ok, err := d.detailObject(in.detail)
	if !ok {
		return err
	}
	d.Detail = detail.Raw
	df, msgMember := in.detailFields(detail, indexed)
	f.executionArn = truthyString(df[0])
	f.stateMachineArn = truthyString(df[1])
	f.status = truthyString(df[2])

	k := d.messageSourceOf(f.status)
	source := [...]string{"input", "output"}[k]
	msg, text, isString := in.message(df[3+k], msgMember[k], indexed, k)
	var m messageScan
	var deep, valid bool
	if isString {
		deep, valid = in.st.msg.Check(text, tapeDepth)
	}
	switch {
	case deep:
		return decodeErrorf("detail.%s is a JSON string %s", source, jsontext.DepthReason)
	case valid:
		m = messageScan{tape: &in.st.msg, data: text, text: string(text)}
		msg = gjson.Parse(m.text)
	case isString:
		d.problem("detail.%s is not valid JSON: %s", source, jsontext.SyntaxReason(text))
		return nil
	case !msg.Exists() && source == "input" && f.status != "RUNNING":
		msg = gjson.Parse("{}") // Cumulus's failed branch uses {} when input is absent
	case msg.Type == gjson.Null || !msg.Exists():
		d.problem("detail.%s is null (EventBridge leaves it out when the payload is too large)", source)
		return nil
	}
	if !msg.IsObject() {
		d.problem("detail.%s is a JSON %s, not a Cumulus message", source, jsonKind(msg))
		return nil
	}
	d.Message = msg.Raw
	m.value = msg
	d.deriveFromMessage(m, f)
	return nil
}

// detailObject is the detail as an object: as it is, or decoded from a
// JSON string. Without one (ok false) derive reads nothing more: a problem
// says why, or the error does (a string nested too deep).
func (d *Decoded) detailObject(detail gjson.Result) (obj gjson.Result, ok bool, err error) {
	switch {
	case detail.IsObject():
		return detail, true, nil
	case detail.Type == gjson.String && jsontext.TooDeep(detail.Str):
		return detail, false, decodeErrorf("detail is a JSON string %s", jsontext.DepthReason)
	case detail.Type == gjson.String && gjson.Valid(detail.Str) && gjson.Parse(detail.Str).IsObject():
		d.problem("detail is a JSON string, not an object (Cumulus v21 derives nothing from it; decoded here)")
		return gjson.Parse(detail.Str), true, nil
	case detail.Type == gjson.String:
		d.problem("detail is a string that is not a JSON object")
	default:
		d.problem("detail is a JSON %s, not an object", jsonKind(detail))
	}
	return detail, false, nil
}

// detailFields are detail's executionArn, stateMachineArn and status
// (df[0:3]) and its input and output: when indexed (the detail is the
// layer's own object, its members found by the scan), as the members
// msgMember (v1 == 0: absent); else as df[3] and df[4]. (An array: a
// slice returned would be allocated.)
func (in *innerLayer) detailFields(detail gjson.Result, indexed bool) (df [5]gjson.Result, msgMember [2]jsonMember) {
	if !indexed {
		copy(df[:], pick(detail, "executionArn", "stateMachineArn", "status", "input", "output"))
		return df, msgMember
	}
	for i, name := range [...]string{"executionArn", "stateMachineArn", "status", "input", "output"} {
		if m, ok := in.ls.find(in.data, in.ls.detailMembers, name); ok {
			if i < 3 {
				df[i] = gjson.Parse(in.text[m.v0:m.v1])
			} else {
				msgMember[i-3] = m
			}
		}
	}
	return df, msgMember
}

// messageSourceOf says where the Cumulus message of an execution of that
// status is (0: detail.input, 1: detail.output), as d.MessageSource does.
func (d *Decoded) messageSourceOf(status string) int {
	switch status {
	case "SUCCEEDED":
		d.MessageSource = "detail.output"
		return 1
	case "":
		d.problem("detail has no status; reading detail.input as Cumulus does for failed executions")
	}
	d.MessageSource = "detail.input" // constants: no concatenation per decode
	return 0
}

// message is the Cumulus message member of detail (k 0: input, 1: output,
// given as the value v when not indexed, else as the member m): as a value
// (msg), or, when it is a JSON string (isString), as its unescaped text,
// which is the layer scan's buffer or st.buf.
func (in *innerLayer) message(v gjson.Result, m jsonMember, indexed bool, k int) (msg gjson.Result, text []byte, isString bool) {
	st, ls := in.st, in.ls
	switch {
	case !indexed:
		msg = v
		if msg.Type == gjson.String {
			isString = true
			text = append(st.buf[:0], msg.Str...)
		}
	case m.v1 == 0:
	case in.data[m.v0] == '"' && ls.msgFrom == k+1:
		isString = true
		text = ls.msgBuf // unescaped by the layer's scan
	case in.data[m.v0] == '"':
		isString = true
		text, _, _ = jsontext.UnescapeString(in.data[:m.v1], m.v0+1, st.buf[:0])
	default:
		msg = gjson.Parse(in.text[m.v0:m.v1])
	}
	if isString && ls.msgFrom != k+1 {
		st.buf = text[:0] // keep the grown buffer
	}
	return msg, text, isString
}

// deriveFromBareMessage reads a bare Cumulus message (the innermost value
// has cumulus_meta): the execution from cumulus_meta, the status from
// meta.status.
func (d *Decoded) deriveFromBareMessage(in *innerLayer, f *derivedFields) {
	d.Message, d.MessageSource = in.value.Raw, "body"
	cm := in.cumulusMeta
	f.stateMachineArn = truthyString(cm.Get("state_machine"))
	if name := truthyString(cm.Get("execution_name")); name != "" && f.stateMachineArn != "" {
		f.executionArn = strings.Replace(f.stateMachineArn, "stateMachine", "execution", 1) + ":" + name
	}
	f.status = sfnStatusOf(truthyString(pick(fieldValue(in.fields, "meta"), "status")[0]))
	d.deriveFromMessage(messageScan{value: in.value}, f)
}

// messageScan is a Cumulus message as derive found it: its value, and,
// when it was given as a JSON string, its tape (of data, whose text is
// text).
type messageScan struct {
	value gjson.Result
	tape  *jsontext.Tape // nil: read the value
	data  []byte
	text  string
}

// deriveFromMessage reads collectionId, granules and providerId from a
// Cumulus message, with the rules of Cumulus's DLA writer.
func (d *Decoded) deriveFromMessage(m messageScan, f *derivedFields) {
	var r gjson.Result
	if m.tape != nil {
		if j := m.tape.Child(m.data, -1, "replace"); j >= 0 {
			r = gjson.Parse(m.text[m.tape.Nodes[j].V0:m.tape.Nodes[j].V1])
		}
	} else {
		r = pick(m.value, "replace")[0]
	}
	if r.IsObject() {
		d.problem("the Cumulus message is held in S3 (replace: s3://%s/%s); fields from the partial message only",
			r.Get("Bucket").String(), r.Get("Key").String())
	}
	var coll, prov, grans string
	if m.tape != nil {
		coll, prov, grans = tapeMessageFields(m.tape, m.data, m.text)
	} else {
		coll, prov, grans = MessageFields(m.value)
	}
	f.collectionID, f.providerID = scalarString(gjson.Parse(coll)), scalarString(gjson.Parse(prov))
	if gs := gjson.Parse(grans); gs.IsArray() {
		f.hasGranules = true
		f.granules = []string{}
		gs.ForEach(func(_, g gjson.Result) bool {
			f.granules = append(f.granules, scalarString(g))
			return true
		})
	}
}

// applyHoisted takes each hoisted field as stored, and falls back to the
// derived value only where the record holds null.
func (d *Decoded) applyHoisted(topFields []Field, f derivedFields) {
	n := 0
	for _, fl := range topFields {
		if IsHoisted(fl.Name) {
			n++
		}
	}
	if n > 0 {
		d.Hoisted = make([]Field, 0, n)
		for _, fl := range topFields {
			if IsHoisted(fl.Name) {
				d.Hoisted = append(d.Hoisted, fl)
			}
		}
	}
	stored := func(key string) gjson.Result { return fieldValue(topFields, key) }
	choose := func(name string, stored gjson.Result, derived string) string {
		if s := scalarString(stored); stored.Type != gjson.Null && stored.Exists() && s != "" {
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
			d.Granules = append(d.Granules, scalarString(v))
			return true
		})
	} else if f.hasGranules {
		d.Granules, d.HasGranules = f.granules, true
		d.Derived = append(d.Derived, "granules")
	}
}

// applyDerived sets every field from the body: the object carried none.
func (d *Decoded) applyDerived(f derivedFields) {
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

// sfnStatusOf maps a Cumulus status back to the Step Functions status.
func sfnStatusOf(cumulusStatus string) string {
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

// truthyString returns the value as JavaScript's `x || null` would keep it:
// "" for null, false, 0, "" and missing; the text otherwise.
func truthyString(v gjson.Result) string {
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

// scalarString is a string value as is, other JSON values as their text.
func scalarString(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Null:
		return ""
	}
	return v.Raw
}

func jsonKind(v gjson.Result) string {
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
