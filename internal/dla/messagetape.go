package dla

import (
	"strings"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"github.com/tidwall/gjson"
)

// The message tape: the few fields of a Cumulus message the decoder reads
// (its collection, provider and granules), found in one pass over it
// (jsontext.Tape).

// tapeDepth: payload.granules[i].granuleId is a member at depth 4.
const tapeDepth = 4

// tapeMessageFields is MessageFields of the message tp checked (text,
// whose bytes are data, down to tapeDepth), with the same rules, reading
// the values from the tape.
func tapeMessageFields(tp *jsontext.Tape, data []byte, text string) (collectionID, providerID, granules string) {
	collectionID, providerID, granules = "null", "null", "null"
	res := func(j int) gjson.Result {
		if j < 0 {
			return gjson.Result{}
		}
		return gjson.Parse(text[tp.Nodes[j].V0:tp.Nodes[j].V1])
	}
	isObject := func(j int) bool { return j < 0 || data[tp.Nodes[j].V0] == '{' }
	// get is pick: nothing from a value that is not an object.
	get := func(p int, name string) int {
		if p == -2 || !isObject(p) {
			return -2
		}
		if j := tp.Child(data, p, name); j >= 0 {
			return j
		}
		return -2
	}
	resOf := func(j int) gjson.Result {
		if j == -2 {
			return gjson.Result{}
		}
		return res(j)
	}
	meta, payload := get(-1, "meta"), get(-1, "payload")
	coll, prov := get(meta, "collection"), get(meta, "provider")
	name, version := resOf(get(coll, "name")), resOf(get(coll, "version"))
	if jsTruthy(name) && jsTruthy(version) {
		collectionID = jsontext.QuoteJS(jsStringOf(name) + "___" + jsStringOf(version))
	}
	if prov != -2 && isObject(prov) {
		id, protocol, host, port := resOf(get(prov, "id")), resOf(get(prov, "protocol")), resOf(get(prov, "host")), resOf(get(prov, "port"))
		if id.Type == gjson.String && protocol.Type == gjson.String && host.Type == gjson.String &&
			(!port.Exists() || port.Type == gjson.Number) {
			providerID = truthyRaw(id)
		}
	}
	if gs := get(payload, "granules"); gs != -2 && data[tp.Nodes[gs].V0] == '[' {
		var b strings.Builder
		b.WriteByte('[')
		for j := gs + 1; j < tp.Nodes[gs].Next; j = tp.Nodes[j].Next {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(truthyRaw(resOf(get(j, "granuleId"))))
		}
		b.WriteByte(']')
		granules = b.String()
	}
	return collectionID, providerID, granules
}
