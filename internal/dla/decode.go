package dla

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
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
			e.reason = e.prefix + ": " + jsontext.SyntaxReason(e.invalid)
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
		return &DecodeError{reason: prefix + ": " + jsontext.SyntaxReason(data)}
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

// IsHoisted reports whether name is one of the fields Cumulus's DLA writer
// adds to every record (hoisted from its body): executionArn,
// stateMachineArn, status, time, collectionId, providerId, granules and
// error.
func IsHoisted(name string) bool { return slices.Contains(hoistedKeys, name) }

// Decode decodes one archive object of any generation. It never panics; an
// object that is not a JSON object, whose body layers are not valid JSON,
// or that nests deeper than jsontext.MaxDepth (in any of its layers, or in
// the detail or Cumulus message it holds as a JSON string), yields a
// *DecodeError together with what could be decoded.
//
// Each layer is read once (layerScan): one pass validates it, finds its
// members and unescapes its body into a reused buffer; only the metadata
// kept and the innermost layer are copied out. The results are those of
// the gjson-based decoder it replaced, quirks included (see layerscan.go).
//
// The steps:
//  1. check that the object is a JSON object (a byte-order mark is noted
//     and skipped);
//  2. unwrap: while the value has a body or Body key, keep the other keys
//     as metadata (outer layers win) and descend into the body;
//  3. derive the hoisted fields from the innermost value (derive), and
//     take them, or those a DLA record holds (applyHoisted).
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
	u := unwrap{d: d, st: st, ls: &st.scans[0], data: raw}
	u.ls.wantLayer = true
	switch deep, valid := u.ls.check(raw); {
	case deep:
		return d, decodeErrorf("object is %s", jsontext.DepthReason)
	case !valid:
		return d, invalidJSONError(raw, "object is not valid JSON")
	}
	if u.ls.kind != '{' {
		return d, decodeErrorf("object is a JSON %s, not an object", jsonKind(gjson.ParseBytes(raw)))
	}
	for u.hasBody() {
		if err := u.descend(); err != nil {
			return d, err
		}
	}
	in := u.innermost()
	d.Depth = len(d.Layers)
	d.Event = in.value.Raw
	d.fillFromMetadata()
	dlaRecord := isDLARecord(u.top)
	d.Generation = generationOf(dlaRecord, len(d.Layers), in.detail.Exists(), in.cumulusMeta.Exists())
	derived, err := d.derive(&in)
	if dlaRecord {
		d.applyHoisted(u.top, derived)
	} else {
		d.applyDerived(derived)
	}
	return d, err
}

// unwrap is the state of Decode's unwrap loop: the layer it is at, and
// what it keeps of the layers above.
type unwrap struct {
	d    *Decoded
	st   *decodeState
	ls   *layerScan // the scan of data
	data []byte     // the current layer's text
	// top are the outermost layer's members: its metadata, or all of them
	// when it is the innermost layer.
	top  []Field
	seen map[string]bool // d.Metadata's names, once there are many
}

// hasBody reports whether the current layer has a body or Body member, to
// descend into.
func (u *unwrap) hasBody() bool {
	return u.ls.kind == '{' && (u.ls.upper >= 0 || u.ls.lower >= 0)
}

// setTop records the outermost layer's members.
func (u *unwrap) setTop(fields []Field) {
	u.top = fields
	u.d.archiveErrorProblem(fields)
}

// descend keeps the current layer (its metadata merged into d.Metadata)
// and makes its body the current layer: Body when it has one, else body.
func (u *unwrap) descend() error {
	d := u.d
	layer := Layer{BodyKey: "Body", Metadata: u.st.metadata(u.ls, u.data)}
	body := u.ls.upper
	if body < 0 {
		layer.BodyKey, body = "body", u.ls.lower
	}
	if len(d.Layers) == 0 {
		u.setTop(layer.Metadata)
	}
	if len(d.Layers) >= maxLayers {
		return decodeErrorf("more than %d nested body layers", maxLayers)
	}
	d.Layers = append(d.Layers, layer)
	switch {
	case d.Metadata == nil && len(layer.Metadata) > 0 && !hasDuplicateName(layer.Metadata):
		// The outermost layer's metadata is the merge so far: share it
		// (its capacity is its length, so merging an inner layer appends
		// to a copy).
		d.Metadata = layer.Metadata
	case d.Metadata == nil && len(layer.Metadata) > 0:
		d.Metadata = make([]Field, 0, len(layer.Metadata)+4)
		fallthrough
	default:
		for _, f := range layer.Metadata {
			u.seen = d.addMetadata(f, u.seen)
		}
	}
	return u.enterBody(layer.BodyKey, body)
}

// enterBody scans the body member (ls.members[body], named key) of the
// layer just kept, the n-th, into the other layer scan, and makes it the
// current layer. A body that is not valid JSON, or nests too deep, ends
// the decode.
func (u *unwrap) enterBody(key string, body int) error {
	ls, n := u.ls, len(u.d.Layers)
	next := &u.st.scans[n%2]
	next.wantLayer = true
	m := ls.members[body]
	switch u.data[m.v0] {
	case 'n':
		u.data = emptyObject
		next.scan(u.data)
	case '"':
		text := ls.upperBuf // unescaped by the layer's scan
		if body == ls.lower && ls.upper < 0 {
			text = ls.lowerBuf
		}
		if deep, valid := next.check(text); deep || !valid {
			d := u.d
			d.Depth = n
			d.fillFromMetadata()
			d.Generation = generationOf(isDLARecord(u.top), n, false, false)
			if deep {
				return decodeErrorf("layer %d %s is %s", n, key, jsontext.DepthReason)
			}
			return invalidJSONError(text, fmt.Sprintf("layer %d %s is not valid JSON", n, key))
		}
		u.data = text
	default:
		// Cumulus would fail here (it parses String(body)); the value is
		// already JSON, so use it.
		raw := u.data[m.v0:m.v1]
		u.d.problem("layer %d %s is a JSON %s, not a string", n, key, jsonKind(gjson.Parse(string(raw))))
		next.src = append(next.src[:0], raw...)
		u.data = next.src
		next.scan(u.data) // a part of a text already validated
	}
	u.ls = next
	return nil
}

// innermost is the current layer as the innermost value: the only layer
// kept whole.
func (u *unwrap) innermost() innerLayer {
	in := innerLayer{st: u.st, ls: u.ls, data: u.data}
	in.text = string(u.data) // exact size: a body's buffer is larger
	if u.ls.kind == '{' {
		// Read by derive, not kept: reused (cleared in release).
		in.fields = slices.Grow(u.st.fields[:0], len(u.ls.members))[:len(u.ls.members)]
		for i, m := range u.ls.members {
			in.fields[i] = Field{Name: keyString(in.text, u.data, m), Raw: in.text[m.v0:m.v1]}
		}
		u.st.fields = in.fields
	}
	if len(u.d.Layers) == 0 {
		u.setTop(in.fields)
	}
	in.value = gjson.Parse(in.text)
	in.detail, in.cumulusMeta = fieldValue(in.fields, "detail"), fieldValue(in.fields, "cumulus_meta")
	return in
}

var emptyObject = []byte("{}")

// decodeState is what one Decode reuses: two layer scans (a layer is read
// from one while its body is unescaped into the other), one for the
// Cumulus message and a buffer.
type decodeState struct {
	scans  [2]layerScan
	msg    jsontext.Tape
	buf    []byte
	fields []Field // the innermost layer's members
}

var decodePool = sync.Pool{New: func() any { return new(decodeState) }}

// maxPooled bounds the buffers kept between decodes (a large object's are
// dropped).
const maxPooled = 1 << 20

func (st *decodeState) release() {
	if nodes, keyBytes := st.msg.Capacity(); nodes > maxPooled/32 || keyBytes > maxPooled {
		st.msg = jsontext.Tape{}
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
			b = jsontext.UnescapeTo(b, data[m.k0:m.k1])
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
			k = len(jsontext.UnescapeTo(ls.keyBuf[:0], data[m.k0:m.k1]))
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
