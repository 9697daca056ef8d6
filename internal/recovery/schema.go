package recovery

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
)

// The API granule schema of Cumulus v21 (packages/api/lib/schemas.js
// `granule`), checked as v21's recordIsValid (packages/api/lib/schema.js)
// checks it: ajv v6 without allErrors, so only the first error is reported,
// on the schema with `additionalProperties: false` added to every object
// that does not say otherwise. Which error is first follows ajv v6's
// generated code for this schema:
//
//   - an object: first its data keys in JavaScript for-in order, the first
//     one the schema does not list being an additionalProperties error;
//     then the schema's properties in the schema's order, a missing
//     required one being a required error (ajv checks a required property
//     that has its own schema inside `properties`, not in `required`), a
//     present one checked by its own schema;
//   - a property: its type, then its enum (status), then for files each item
//     in order, as an object.
//
// testdata/schema-v21/golden.json, made by v21's own code, pins this.

type jsonType int

const (
	tString jsonType = iota
	tNumber
	tInteger
	tBoolean
	tObject
	tArray
)

func (t jsonType) String() string {
	return [...]string{"string", "number", "integer", "boolean", "object", "array"}[t]
}

// schemaProp is one entry of a schema's `properties`.
type schemaProp struct {
	name  string
	typ   jsonType
	enum  []string
	items []schemaProp // for an array: its items are objects with these properties (closed)
}

// granuleProps is the granule schema's properties, in its order. error and
// queryFields are open objects (additionalProperties: true).
var granuleProps = []schemaProp{
	{name: "archived", typ: tBoolean},
	{name: "granuleId", typ: tString},
	{name: "producerGranuleId", typ: tString},
	{name: "pdrName", typ: tString},
	{name: "collectionId", typ: tString},
	{name: "status", typ: tString, enum: []string{"running", "completed", "failed", "queued"}},
	{name: "execution", typ: tString},
	{name: "cmrLink", typ: tString},
	{name: "published", typ: tBoolean},
	{name: "duration", typ: tNumber},
	{name: "files", typ: tArray, items: []schemaProp{
		{name: "bucket", typ: tString},
		{name: "checksum", typ: tString},
		{name: "checksumType", typ: tString},
		{name: "createdAt", typ: tInteger},
		{name: "fileName", typ: tString},
		{name: "key", typ: tString},
		{name: "size", typ: tInteger},
		{name: "source", typ: tString},
		{name: "type", typ: tString},
		{name: "updatedAt", typ: tInteger},
	}},
	{name: "error", typ: tObject},
	{name: "productVolume", typ: tString},
	{name: "timeToPreprocess", typ: tNumber},
	{name: "beginningDateTime", typ: tString},
	{name: "endingDateTime", typ: tString},
	{name: "processingStartDateTime", typ: tString},
	{name: "processingEndDateTime", typ: tString},
	{name: "lastUpdateDateTime", typ: tString},
	{name: "timeToArchive", typ: tNumber},
	{name: "productionDateTime", typ: tString},
	{name: "timestamp", typ: tInteger},
	{name: "createdAt", typ: tInteger},
	{name: "updatedAt", typ: tInteger},
	{name: "provider", typ: tString},
	{name: "queryFields", typ: tObject},
}

var granuleRequired = []string{"granuleId", "collectionId", "producerGranuleId", "status", "updatedAt"}

// SchemaError is one ajv v6 error object, its fields in ajv's order.
type SchemaError struct {
	Keyword    string
	DataPath   string // JavaScript notation: ".files[0].checksum"
	SchemaPath string // "#/properties/files/items/properties/checksum/type"
	Params     string // JSON text, e.g. {"type":"string"}
	Message    string
}

func (e SchemaError) json() string {
	return buildObject([]kv{
		{"keyword", jsontext.QuoteJS(e.Keyword)},
		{"dataPath", jsontext.QuoteJS(e.DataPath)},
		{"schemaPath", jsontext.QuoteJS(e.SchemaPath)},
		{"params", e.Params},
		{"message", jsontext.QuoteJS(e.Message)},
	})
}

// SchemaValidationError is the error recordIsValid throws: ajv's errors
// (one, as ajv stops at the first).
type SchemaValidationError struct{ Errors []SchemaError }

// Detail is the error's `detail`: JSON.stringify(validate.errors).
func (e *SchemaValidationError) Detail() string {
	parts := make([]string, len(e.Errors))
	for i, se := range e.Errors {
		parts[i] = se.json()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Error is String(err) of v21's error: its name, then its message.
func (e *SchemaValidationError) Error() string {
	return "SchemaValidationError: The record has validation errors: " + e.Detail()
}

// causeJSON is JSON.stringify of the thrown error: its own enumerable
// properties, name then detail (message and stack are not enumerable).
func (e *SchemaValidationError) causeJSON() string {
	return buildObject([]kv{{"name", `"SchemaValidationError"`}, {"detail", jsontext.QuoteJS(e.Detail())}})
}

// SchemaFailedGranuleError is what v21 throws for a granule in a final
// state (completed, failed) that fails the schema, after marking it failed.
type SchemaFailedGranuleError struct{ Cause *SchemaValidationError }

func (e *SchemaFailedGranuleError) Error() string {
	return "Error: Granule/granule files failed schema validation and will be updated in the datastore with the error and a status of failed"
}

func (e *SchemaFailedGranuleError) Unwrap() error { return e.Cause }

// schemaFailureError is the error column v21 writes on a granule that fails
// the schema: {errors: JSON.stringify([originalError, {Error, Cause}])},
// the API record's error (the parsed exception, `{}` when there is none)
// kept when truthy.
func schemaFailureError(originalError string, verr *SchemaValidationError) string {
	var prior []string
	if originalError != "" && truthy(gjson.Parse(originalError)) {
		prior = append(prior, originalError)
	}
	return errorsColumn(prior, "Failed writing granule record due to SchemaValdationError.", verr.causeJSON())
}

// validateGranule checks the API record (nils removed) as v21's
// recordIsValid does and returns ajv's first error, or nil.
func validateGranule(rec []kv) *SchemaValidationError {
	if se, bad := validateObject(rec, "", "#", granuleProps, granuleRequired); bad {
		return &SchemaValidationError{Errors: []SchemaError{se}}
	}
	return nil
}

func validateObject(fields []kv, dataPath, schemaPath string, props []schemaProp, required []string) (SchemaError, bool) {
	index := map[string]int{}
	for i, f := range fields {
		index[f.key] = i // JSON.parse keeps the last of duplicate keys
	}
	for _, k := range forInOrder(fields) {
		if !slices.ContainsFunc(props, func(p schemaProp) bool { return p.name == k }) {
			return SchemaError{"additionalProperties", dataPath, schemaPath + "/additionalProperties",
				buildObject([]kv{{"additionalProperty", jsontext.QuoteJS(k)}}), "should NOT have additional properties"}, true
		}
	}
	for _, p := range props {
		i, ok := index[p.name]
		if !ok {
			if slices.Contains(required, p.name) {
				return SchemaError{"required", dataPath, schemaPath + "/required",
					buildObject([]kv{{"missingProperty", jsontext.QuoteJS(p.name)}}),
					"should have required property '" + p.name + "'"}, true
			}
			continue
		}
		if se, bad := validateProp(gjson.Parse(fields[i].raw), p, dataPath+"."+p.name, schemaPath+"/properties/"+p.name); bad {
			return se, true
		}
	}
	return SchemaError{}, false
}

func validateProp(v gjson.Result, p schemaProp, dataPath, schemaPath string) (SchemaError, bool) {
	if !ajvHasType(v, p.typ) {
		return typeError(p.typ, dataPath, schemaPath), true
	}
	if p.enum != nil && !slices.Contains(p.enum, v.Str) {
		vals := make([]string, len(p.enum))
		for i, e := range p.enum {
			vals[i] = jsontext.QuoteJS(e)
		}
		return SchemaError{"enum", dataPath, schemaPath + "/enum",
			`{"allowedValues":[` + strings.Join(vals, ",") + `]}`, "should be equal to one of the allowed values"}, true
	}
	if p.items != nil {
		for i, item := range v.Array() {
			itemPath, itemSchema := dataPath+"["+strconv.Itoa(i)+"]", schemaPath+"/items"
			if !item.IsObject() {
				return typeError(tObject, itemPath, itemSchema), true
			}
			if se, bad := validateObject(fieldsOf(item.Raw), itemPath, itemSchema, p.items, nil); bad {
				return se, true
			}
		}
	}
	return SchemaError{}, false
}

func typeError(t jsonType, dataPath, schemaPath string) SchemaError {
	return SchemaError{"type", dataPath, schemaPath + "/type",
		buildObject([]kv{{"type", jsontext.QuoteJS(t.String())}}), "should be " + t.String()}
}

// ajvHasType is ajv v6's checkDataType: integer is a number with no
// fraction (Infinity included, as `Infinity % 1` is NaN, falsy).
func ajvHasType(v gjson.Result, t jsonType) bool {
	switch t {
	case tString:
		return v.Type == gjson.String
	case tNumber:
		return v.Type == gjson.Number
	case tInteger:
		return v.Type == gjson.Number && (v.Num == math.Trunc(v.Num) || math.IsInf(v.Num, 0))
	case tBoolean:
		return v.Type == gjson.True || v.Type == gjson.False
	case tObject:
		return v.IsObject()
	case tArray:
		return v.IsArray()
	}
	return false
}

// forInOrder is the order of a JavaScript object's keys: array indexes
// ascending, then the other keys in the order first given.
func forInOrder(fields []kv) []string {
	var idx []uint64
	var rest []string
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.key] {
			continue
		}
		seen[f.key] = true
		if n, ok := arrayIndex(f.key); ok {
			idx = append(idx, n)
		} else {
			rest = append(rest, f.key)
		}
	}
	slices.Sort(idx)
	out := make([]string, 0, len(idx)+len(rest))
	for _, n := range idx {
		out = append(out, strconv.FormatUint(n, 10))
	}
	return append(out, rest...)
}

// arrayIndex reports whether k is a canonical array index ("0" to
// "4294967294").
func arrayIndex(k string) (uint64, bool) {
	if k == "" || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n >= math.MaxUint32 {
		return 0, false
	}
	return n, true
}
