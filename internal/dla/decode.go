package dla

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// maxLayers bounds the unwrap loop. Every string layer consumes one level of
// escaping, so real archives stop at 3 or 4; a bound keeps hostile input cheap.
const maxLayers = 64

// Field is one metadata key with its raw JSON value.
type Field struct {
	Name string
	Raw  string
}

// Layer describes one SQS-like wrapper that was unwrapped.
type Layer struct {
	BodyKey  string  // "Body" or "body"
	Metadata []Field // the keys of this layer other than body/Body, in order
}

// Decoded is an archive object decoded layer by layer: the Record plus the
// pieces `dla show` prints. The Raw fields are JSON texts ("" when absent).
type Decoded struct {
	Record
	Layers   []Layer // outermost first
	Metadata []Field // merged SQS metadata; outer layers win, as in Cumulus
	Hoisted  []Field // the hoisted fields of a DLA record, as stored
	Event    string  // the innermost object (the EventBridge event, when it is one)
	Detail   string  // the Step Functions detail, decoded when it was a string
	Message  string  // the Cumulus message (input or output by status)
	// MessageSource names where Message came from: "detail.input",
	// "detail.output", or "body" for a bare Cumulus message.
	MessageSource string
	// Digest is the MD5 of the object's bytes, set by the reader when it
	// was asked for it (selection.Scope.Digest), so that a delete can be
	// made only while the object still holds what was read.
	Digest    [16]byte `json:"-"`
	HasDigest bool     `json:"-"`
}

// DecodeError says why an object could not be decoded. The Decoded value
// returned with it holds whatever was decoded before the failure.
type DecodeError struct {
	once   sync.Once
	reason string
	// invalid, with prefix set, is a copy of the JSON that did not validate:
	// Error explains why (encoding/json validating it again, which costs
	// more than reading the object) the first time it is asked, and drops
	// it. A scan that reports only a few of its unreadable objects never
	// pays for the others; the text is the same whenever it is made.
	invalid []byte
	prefix  string // the reason, before ": " and why invalid is not JSON
}

func (e *DecodeError) Error() string {
	e.once.Do(func() {
		if e.prefix != "" {
			e.reason = e.prefix + ": " + jsonSyntaxReason(e.invalid)
			e.invalid, e.prefix = nil, ""
		}
	})
	return e.reason
}

// maxLazyReason bounds the copy a DecodeError keeps to explain itself
// later: a scan holds the results of a few hundred objects at once (its
// runs in flight), and a copy of each unreadable 64 MiB object took a
// search of an archive of such objects to gigabytes. The reason of a
// larger object is made at once, from the bytes read.
const maxLazyReason = 64 << 10

// invalidJSONError is the *DecodeError of data that is not valid JSON: the
// reason reads prefix + ": " + why, made when it is first asked for (at
// once for data larger than maxLazyReason).
func invalidJSONError(data []byte, prefix string) error {
	if len(data) > maxLazyReason {
		return &DecodeError{reason: prefix + ": " + jsonSyntaxReason(data)}
	}
	return &DecodeError{invalid: bytes.Clone(data), prefix: prefix}
}

// IsDecodeError reports whether err is a *DecodeError.
func IsDecodeError(err error) bool {
	var de *DecodeError
	return errors.As(err, &de)
}

func decodeErrorf(format string, args ...any) error {
	return &DecodeError{reason: fmt.Sprintf(format, args...)}
}

// utf8BOM is the UTF-8 byte-order mark, accepted at the start of an object.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// hoistedKeys are the fields Cumulus's DLA writer adds to every record.
var hoistedKeys = []string{"executionArn", "stateMachineArn", "status", "time", "collectionId", "providerId", "granules", "error"}

// Decode decodes one archive object of any generation. It never panics; an
// object that is not a JSON object, whose body layers are not valid JSON,
// or that nests deeper than MaxDepth (in any of its layers, or in the
// detail or Cumulus message it holds as a JSON string), yields a
// *DecodeError together with what could be decoded.
//
// Each layer is read once (layerScan): one pass validates it, finds its
// members and unescapes its body into a reused buffer; only the metadata
// kept and the innermost layer are copied out. The results are those of
// the gjson-based decoder it replaced, quirks included (see scan.go).
func Decode(raw []byte) (*Decoded, error) {
	d := &Decoded{}
	d.Size = int64(len(raw))
	if rest, ok := bytes.CutPrefix(raw, utf8BOM); ok {
		// Editors on Windows write one; JSON parsers reject it.
		raw = rest
		d.problem("starts with a UTF-8 byte-order mark (ignored)")
	}
	st := decodePool.Get().(*decodeState)
	defer st.release()
	ls := &st.scans[0]
	ls.wantLayer = true
	switch deep, valid := ls.check(raw); {
	case deep:
		return d, decodeErrorf("object is %s", depthReason)
	case !valid:
		return d, invalidJSONError(raw, "object is not valid JSON")
	}
	if ls.kind != '{' {
		return d, decodeErrorf("object is a JSON %s, not an object", jsonKind(gjson.ParseBytes(raw)))
	}

	// The unwrap loop: while the value has a body or Body key, keep the other
	// keys as metadata (outer layers win) and descend into the body. data is
	// the current layer's text, already scanned into ls.
	var topFields, innerFields []Field
	var seen map[string]bool // d.Metadata's names, once there are many
	data := raw
	var inner string // the innermost layer's text
	for {
		if ls.kind != '{' || (ls.upper < 0 && ls.lower < 0) {
			// The innermost value: the only layer kept whole.
			inner = string(data) // exact size: a body's buffer is larger
			if ls.kind == '{' {
				// Read by derive, not kept: reused (cleared in release).
				innerFields = slices.Grow(st.fields[:0], len(ls.members))[:len(ls.members)]
				for i, m := range ls.members {
					innerFields[i] = Field{Name: keyString(inner, data, m), Raw: inner[m.v0:m.v1]}
				}
				st.fields = innerFields
			}
			if len(d.Layers) == 0 {
				topFields = innerFields
				d.archiveErrorProblem(topFields)
			}
			break
		}
		layer := Layer{BodyKey: "Body", Metadata: st.metadata(ls, data)}
		body := ls.upper
		if body < 0 {
			layer.BodyKey, body = "body", ls.lower
		}
		if len(d.Layers) == 0 {
			topFields = layer.Metadata
			d.archiveErrorProblem(topFields)
		}
		if len(d.Layers) >= maxLayers {
			return d, decodeErrorf("more than %d nested body layers", maxLayers)
		}
		d.Layers = append(d.Layers, layer)
		switch {
		case d.Metadata == nil && len(layer.Metadata) > 0 && !hasDuplicateName(layer.Metadata):
			// The outermost layer's metadata is the merge so far: share
			// it (its capacity is its length, so merging an inner layer
			// appends to a copy).
			d.Metadata = layer.Metadata
		case d.Metadata == nil && len(layer.Metadata) > 0:
			d.Metadata = make([]Field, 0, len(layer.Metadata)+4)
			fallthrough
		default:
			for _, f := range layer.Metadata {
				seen = d.addMetadata(f, seen)
			}
		}
		n := len(d.Layers)
		next := &st.scans[n%2]
		next.wantLayer = true
		m := ls.members[body]
		switch data[m.v0] {
		case 'n':
			data = emptyObject
		case '"':
			data = ls.upperBuf
			if body == ls.lower && ls.upper < 0 {
				data = ls.lowerBuf
			}
			deep, valid := next.check(data)
			if deep {
				d.Depth = n
				d.fillFromMetadata()
				d.Generation = generationOf(isDLARecord(topFields), n, false, false)
				return d, decodeErrorf("layer %d %s is %s", n, layer.BodyKey, depthReason)
			}
			if !valid {
				d.Depth = n
				d.fillFromMetadata()
				d.Generation = generationOf(isDLARecord(topFields), n, false, false)
				return d, invalidJSONError(data, fmt.Sprintf("layer %d %s is not valid JSON", n, layer.BodyKey))
			}
			ls = next
			continue
		default:
			// Cumulus would fail here (it parses String(body)); the value is
			// already JSON, so use it.
			d.problem("layer %d %s is a JSON %s, not a string", n, layer.BodyKey, jsonKind(gjson.Parse(string(data[m.v0:m.v1]))))
			next.src = append(next.src[:0], data[m.v0:m.v1]...)
			data = next.src
		}
		next.scan(data) // a part of a text already validated, or {}
		ls = next
	}
	cur := gjson.Parse(inner)
	d.Depth = len(d.Layers)
	d.Event = cur.Raw
	d.fillFromMetadata()
	detail, cumulusMeta := fieldValue(innerFields, "detail"), fieldValue(innerFields, "cumulus_meta")
	dlaRecord := isDLARecord(topFields)
	d.Generation = generationOf(dlaRecord, len(d.Layers), detail.Exists(), cumulusMeta.Exists())

	derived, err := d.derive(st, ls, data, inner, cur, innerFields, detail, cumulusMeta)
	if dlaRecord {
		d.applyHoisted(topFields, derived)
	} else {
		d.applyDerived(derived)
	}
	return d, err
}

var emptyObject = []byte("{}")

// decodeState is what one Decode reuses: two layer scans (a layer is read
// from one while its body is unescaped into the other), one for the
// Cumulus message and a buffer.
type decodeState struct {
	scans  [2]layerScan
	msg    msgTape
	buf    []byte
	fields []Field // the innermost layer's members
}

var decodePool = sync.Pool{New: func() any { return new(decodeState) }}

// maxPooled bounds the buffers kept between decodes (a large object's are
// dropped).
const maxPooled = 1 << 20

func (st *decodeState) release() {
	if cap(st.msg.nodes) > maxPooled/32 || cap(st.msg.keyBuf) > maxPooled {
		st.msg = msgTape{}
	}
	for _, ls := range []*layerScan{&st.scans[0], &st.scans[1]} {
		if cap(ls.upperBuf) > maxPooled || cap(ls.lowerBuf) > maxPooled || cap(ls.src) > maxPooled || cap(ls.msgBuf) > maxPooled || cap(ls.keyBuf) > maxPooled ||
			cap(ls.members) > maxPooled/32 || cap(ls.detailMembers) > maxPooled/32 {
			*ls = layerScan{}
		}
	}
	if cap(st.buf) > maxPooled {
		st.buf = nil
	}
	clear(st.fields) // it points into a Decoded's strings
	if cap(st.fields) > maxPooled/32 {
		st.fields = nil
	}
	decodePool.Put(st)
}

// metadata copies the members of a layer other than Body and body out of
// data, into one string (nil when there are none).
func (st *decodeState) metadata(ls *layerScan, data []byte) []Field {
	b := st.buf[:0]
	n := 0
	for _, m := range ls.members {
		if m.body {
			continue
		}
		n++
		if m.kEsc {
			b = unescapeTo(b, data[m.k0:m.k1])
		} else {
			b = append(b, data[m.k0:m.k1]...)
		}
		b = append(b, data[m.v0:m.v1]...)
	}
	st.buf = b
	if n == 0 {
		return nil
	}
	s := string(b)
	fields := make([]Field, 0, n) // cap n: see Decode's merge
	at := 0
	for _, m := range ls.members {
		if m.body {
			continue
		}
		k := m.k1 - m.k0
		if m.kEsc {
			k = len(unescapeTo(ls.keyBuf[:0], data[m.k0:m.k1]))
		}
		name := s[at : at+k]
		at += k
		fields = append(fields, Field{Name: name, Raw: s[at : at+m.v1-m.v0]})
		at += m.v1 - m.v0
	}
	return fields
}

// archiveErrorProblem reports a record the DLA writer archived as it came.
func (d *Decoded) archiveErrorProblem(topFields []Field) {
	if v := fieldValue(topFields, ArchiveErrorKey); v.Type == gjson.String {
		d.problem("archived as it came by the DLA writer: %s", v.Str)
	}
}

// isDLARecord: the DLA writer adds its hoisted keys to every record.
func isDLARecord(top []Field) bool {
	n := 0
	for _, f := range top {
		switch f.Name {
		case "executionArn", "collectionId", "granules":
			n++
		}
	}
	return n == 3
}

// pick returns the values of the named keys of an object in one pass (a
// missing key gives a Result that does not exist).
func pick(v gjson.Result, names ...string) []gjson.Result {
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

// fieldValue is the value of a key among fields already walked (a missing
// key gives a Result that does not exist).
func fieldValue(fields []Field, name string) gjson.Result {
	for _, f := range fields {
		if f.Name == name {
			return gjson.Parse(f.Raw)
		}
	}
	return gjson.Result{}
}

func generationOf(isDLARecord bool, layers int, hasDetail, hasCumulusMeta bool) Generation {
	switch {
	case isDLARecord:
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

// hasDuplicateName reports whether two of fields have the same name (a
// map past a few names: a record may have 100,000 of them).
func hasDuplicateName(fields []Field) bool {
	if len(fields) > 32 {
		names := make(map[string]struct{}, len(fields))
		for _, f := range fields {
			if _, dup := names[f.Name]; dup {
				return true
			}
			names[f.Name] = struct{}{}
		}
		return false
	}
	for i, f := range fields {
		for _, g := range fields[:i] {
			if g.Name == f.Name {
				return true
			}
		}
	}
	return false
}

// addMetadata adds f unless a key of that name is there (the outer layer's
// value, or the first of a layer's duplicates, wins). seen indexes the
// names once there are more than a few: a search of the list for every key
// would make a record of many keys (100,000 in a 1 MB SQS message) cost
// seconds. It returns seen, nil while the list is short.
func (d *Decoded) addMetadata(f Field, seen map[string]bool) map[string]bool {
	if seen == nil && len(d.Metadata) < 32 {
		for _, have := range d.Metadata {
			if have.Name == f.Name {
				return nil
			}
		}
		d.Metadata = append(d.Metadata, f)
		return nil
	}
	if seen == nil {
		seen = make(map[string]bool, 2*len(d.Metadata))
		for _, have := range d.Metadata {
			seen[have.Name] = true
		}
	}
	if !seen[f.Name] {
		seen[f.Name] = true
		d.Metadata = append(d.Metadata, f)
	}
	return seen
}

// fillFromMetadata sets the fields that come from the SQS metadata.
func (d *Decoded) fillFromMetadata() {
	if v := fieldValue(d.Metadata, "messageId"); v.Exists() {
		d.MessageID = scalarString(v)
	} else {
		d.MessageID = scalarString(fieldValue(d.Metadata, "MessageId"))
	}
	if v := fieldValue(d.Metadata, "error"); v.Exists() && v.Type != gjson.Null {
		d.Error, d.HasError = scalarString(v), true
	}
}

func (d *Decoded) problem(format string, args ...any) {
	d.Problems = append(d.Problems, fmt.Sprintf(format, args...))
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
// for a detail or message string nested deeper than MaxDepth.
func (d *Decoded) derive(st *decodeState, ls *layerScan, data []byte, inner string, cur gjson.Result, innerFields []Field, detail, cumulusMeta gjson.Result) (derivedFields, error) {
	var f derivedFields
	if !cur.IsObject() {
		return f, nil
	}
	if detail.Exists() {
		f.time = truthyString(fieldValue(innerFields, "time"))
		indexed := false // detail's members were found by the layer's scan
		switch {
		case detail.IsObject():
			indexed = true
		case detail.Type == gjson.String && TooDeep(detail.Str):
			return f, decodeErrorf("detail is a JSON string %s", depthReason)
		case detail.Type == gjson.String && gjson.Valid(detail.Str) && gjson.Parse(detail.Str).IsObject():
			d.problem("detail is a JSON string, not an object (Cumulus v21 derives nothing from it; decoded here)")
			detail = gjson.Parse(detail.Str)
		case detail.Type == gjson.String:
			d.problem("detail is a string that is not a JSON object")
			return f, nil
		default:
			d.problem("detail is a JSON %s, not an object", jsonKind(detail))
			return f, nil
		}
		d.Detail = detail.Raw
		var df []gjson.Result
		var msgMember [2]jsonMember // input, output (v1 == 0: absent)
		if indexed {
			df = make([]gjson.Result, 3)
			for i, name := range [...]string{"executionArn", "stateMachineArn", "status", "input", "output"} {
				if m, ok := ls.find(data, ls.detailMembers, name); ok {
					if i < 3 {
						df[i] = gjson.Parse(inner[m.v0:m.v1])
					} else {
						msgMember[i-3] = m
					}
				}
			}
		} else {
			df = pick(detail, "executionArn", "stateMachineArn", "status", "input", "output")
		}
		f.executionArn = truthyString(df[0])
		f.stateMachineArn = truthyString(df[1])
		f.status = truthyString(df[2])

		source := "input"
		d.MessageSource = "detail.input" // constants: no concatenation per decode
		switch f.status {
		case "RUNNING":
		case "SUCCEEDED":
			source, d.MessageSource = "output", "detail.output"
		case "":
			d.problem("detail has no status; reading detail.input as Cumulus does for failed executions")
		}
		var msg gjson.Result
		var text []byte // the message given as a JSON string, unescaped
		isString := false
		k := 0
		if source == "output" {
			k = 1
		}
		switch m := msgMember[k]; {
		case !indexed:
			msg = df[3+k]
			if msg.Type == gjson.String {
				isString = true
				text = append(st.buf[:0], msg.Str...)
			}
		case m.v1 == 0:
		case data[m.v0] == '"' && ls.msgFrom == k+1:
			isString = true
			text = ls.msgBuf // unescaped by the layer's scan
		case data[m.v0] == '"':
			isString = true
			text, _, _ = unescapeString(data[:m.v1], m.v0+1, st.buf[:0])
		default:
			msg = gjson.Parse(inner[m.v0:m.v1])
		}
		if isString && ls.msgFrom != k+1 {
			st.buf = text[:0] // keep the grown buffer
		}
		var msgIdx *msgTape
		var msgText string
		var deep, valid bool
		if isString {
			deep, valid = st.msg.check(text)
		}
		switch {
		case deep:
			return f, decodeErrorf("detail.%s is a JSON string %s", source, depthReason)
		case valid:
			msgText, msgIdx = string(text), &st.msg
			msg = gjson.Parse(msgText)
		case isString:
			d.problem("detail.%s is not valid JSON: %s", source, jsonSyntaxReason(text))
			return f, nil
		case !msg.Exists() && source == "input" && f.status != "RUNNING":
			msg = gjson.Parse("{}") // Cumulus's failed branch uses {} when input is absent
		case msg.Type == gjson.Null || !msg.Exists():
			d.problem("detail.%s is null (EventBridge leaves it out when the payload is too large)", source)
			return f, nil
		}
		if !msg.IsObject() {
			d.problem("detail.%s is a JSON %s, not a Cumulus message", source, jsonKind(msg))
			return f, nil
		}
		d.Message = msg.Raw
		d.deriveFromMessage(msg, &f, msgIdx, text, msgText)
		return f, nil
	}
	if cumulusMeta.Exists() {
		d.Message, d.MessageSource = cur.Raw, "body"
		cm := cumulusMeta
		f.stateMachineArn = truthyString(cm.Get("state_machine"))
		if name := truthyString(cm.Get("execution_name")); name != "" && f.stateMachineArn != "" {
			f.executionArn = strings.Replace(f.stateMachineArn, "stateMachine", "execution", 1) + ":" + name
		}
		f.status = sfnStatusOf(truthyString(pick(fieldValue(innerFields, "meta"), "status")[0]))
		d.deriveFromMessage(cur, &f, nil, nil, "")
	}
	return f, nil
}

// deriveFromMessage reads collectionId, granules and providerId from a
// Cumulus message, with the rules of Cumulus's DLA writer. tp, when not
// nil, is the message's scan, of data, whose text is text.
func (d *Decoded) deriveFromMessage(msg gjson.Result, f *derivedFields, tp *msgTape, data []byte, text string) {
	var r gjson.Result
	if tp != nil {
		if j := tp.child(data, -1, "replace"); j >= 0 {
			r = gjson.Parse(text[tp.nodes[j].v0:tp.nodes[j].v1])
		}
	} else {
		r = pick(msg, "replace")[0]
	}
	if r.IsObject() {
		d.problem("the Cumulus message is held in S3 (replace: s3://%s/%s); fields from the partial message only",
			r.Get("Bucket").String(), r.Get("Key").String())
	}
	var coll, prov, grans string
	if tp != nil {
		coll, prov, grans = tp.messageFields(data, text)
	} else {
		coll, prov, grans = MessageFields(msg)
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
		if slices.Contains(hoistedKeys, fl.Name) {
			n++
		}
	}
	if n > 0 {
		d.Hoisted = make([]Field, 0, n)
		for _, fl := range topFields {
			if slices.Contains(hoistedKeys, fl.Name) {
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

// jsonSyntaxReason explains why raw is not valid JSON (only on the error path).
func jsonSyntaxReason(raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 { // no copy of raw
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
