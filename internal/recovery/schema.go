package recovery

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// The API granule schema of Cumulus v21 (packages/api/lib/schemas.js
// `granule`), checked on the API record with nils removed.

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

var granuleSchema = map[string]jsonType{
	"granuleId": tString, "pdrName": tString, "collectionId": tString, "status": tString,
	"execution": tString, "cmrLink": tString, "published": tBoolean, "duration": tNumber,
	"files": tArray, "error": tObject, "productVolume": tString, "timeToPreprocess": tNumber,
	"beginningDateTime": tString, "endingDateTime": tString, "processingStartDateTime": tString,
	"processingEndDateTime": tString, "lastUpdateDateTime": tString, "timeToArchive": tNumber,
	"productionDateTime": tString, "timestamp": tInteger, "createdAt": tInteger, "updatedAt": tInteger,
	"provider": tString, "queryFields": tObject, "producerGranuleId": tString,
}

var fileSchema = map[string]jsonType{
	"bucket": tString, "checksum": tString, "checksumType": tString, "createdAt": tInteger,
	"fileName": tString, "key": tString, "size": tInteger, "source": tString, "type": tString,
	"updatedAt": tInteger,
}

var granuleRequired = []string{"granuleId", "collectionId", "producerGranuleId", "status", "updatedAt"}

var granuleStatuses = map[string]bool{"running": true, "completed": true, "failed": true, "queued": true}

func hasType(v gjson.Result, t jsonType) bool {
	switch t {
	case tString:
		return v.Type == gjson.String
	case tNumber:
		return v.Type == gjson.Number
	case tInteger:
		return isInteger(v)
	case tBoolean:
		return v.Type == gjson.True || v.Type == gjson.False
	case tObject:
		return v.IsObject()
	case tArray:
		return v.IsArray()
	}
	return false
}

// validateGranule returns a *SchemaValidationError naming every problem,
// or nil.
func validateGranule(rec []kv) error {
	var problems []string
	seen := map[string]bool{}
	for _, f := range rec {
		seen[f.key] = true
		v := gjson.Parse(f.raw)
		t, ok := granuleSchema[f.key]
		if !ok {
			problems = append(problems, fmt.Sprintf("must NOT have additional property %q", f.key))
			continue
		}
		if !hasType(v, t) {
			problems = append(problems, fmt.Sprintf("/%s must be %s", f.key, t))
			continue
		}
		if f.key == "status" && !granuleStatuses[v.Str] {
			problems = append(problems, "/status must be equal to one of the allowed values (running, completed, failed, queued)")
		}
		if f.key == "files" {
			i := 0
			v.ForEach(func(_, file gjson.Result) bool {
				if !file.IsObject() {
					problems = append(problems, fmt.Sprintf("/files/%d must be object", i))
				}
				file.ForEach(func(k, fv gjson.Result) bool {
					ft, ok := fileSchema[k.Str]
					switch {
					case !ok:
						problems = append(problems, fmt.Sprintf("/files/%d must NOT have additional property %q", i, k.Str))
					case !hasType(fv, ft):
						problems = append(problems, fmt.Sprintf("/files/%d/%s must be %s", i, k.Str, ft))
					}
					return true
				})
				i++
				return true
			})
		}
	}
	for _, k := range granuleRequired {
		if !seen[k] {
			problems = append(problems, fmt.Sprintf("must have required property %q", k))
		}
	}
	if len(problems) > 0 {
		return &SchemaValidationError{Problems: problems}
	}
	return nil
}
