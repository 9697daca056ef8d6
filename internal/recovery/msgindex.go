package recovery

import "github.com/tidwall/gjson"

// Getter is what the record builders read a message with: a gjson.Result,
// or a Msg, which answers the same paths from an index.
type Getter interface {
	Get(path string) gjson.Result
}

// Msg is a Cumulus message with an index of its top two levels of keys.
// Write reads some thirty paths of each message (meta.status,
// cumulus_meta.execution_name, payload.granules, ...); gjson reads each
// one by scanning the message from its start, skipping every value before
// it (the collection's file specs under meta, the payload), so a message
// was scanned some thirty times. Msg scans the top level, and each object
// under it, once, when first needed; Get then answers from the index what
// gjson.Result.Get answers by scanning: the first key of that name at each
// level, as gjson matches keys, and the same Result (Raw, Type, value).
// A path that is not plain keys (wildcards, escapes, modifiers, queries)
// goes to gjson, as does a message that is not a valid JSON object or
// lists a key twice (at the top level: the whole message; below it: that
// object).
type Msg struct {
	gjson.Result
	idx *msgIndex
}

type msgIndex struct {
	top map[string]gjson.Result
	sub map[string]map[string]gjson.Result // the keys of each object under the top level, by its key
}

// Index indexes msg (see Msg).
func Index(msg gjson.Result) Msg {
	m := Msg{Result: msg}
	if !msg.IsObject() || !gjson.Valid(msg.Raw) {
		return m
	}
	top, dup := keysOf(msg)
	if !dup {
		m.idx = &msgIndex{top: top, sub: map[string]map[string]gjson.Result{}}
	}
	return m
}

// keysOf maps each key of an object to its value; dup reports a key
// listed twice. gjson then takes the first along which the rest of the
// path resolves, so such an object is left to gjson.
func keysOf(obj gjson.Result) (keys map[string]gjson.Result, dup bool) {
	keys = make(map[string]gjson.Result, 8)
	obj.ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		if _, dup = keys[name]; dup {
			return false
		}
		keys[name] = v
		return true
	})
	return keys, dup
}

// Get is gjson.Result.Get(path).
func (m Msg) Get(path string) gjson.Result {
	if m.idx == nil || !plainPath(path) {
		return m.Result.Get(path)
	}
	first, rest := cut(path)
	v, ok := m.idx.top[first]
	if !ok || rest == "" {
		return v
	}
	if !v.IsObject() {
		return v.Get(rest)
	}
	keys, ok := m.idx.sub[first]
	if !ok {
		var dup bool
		if keys, dup = keysOf(v); dup {
			keys = nil
		}
		m.idx.sub[first] = keys
	}
	if keys == nil {
		return v.Get(rest)
	}
	second, rest := cut(rest)
	w, ok := keys[second]
	if !ok || rest == "" {
		return w
	}
	return w.Get(rest)
}

func cut(path string) (string, string) {
	for i := 0; i < len(path); i++ {
		if path[i] == '.' {
			return path[:i], path[i+1:]
		}
	}
	return path, ""
}

// plainPath reports whether path is keys of letters, digits and '_'
// joined by single dots: what gjson reads as plain key names.
func plainPath(path string) bool {
	if path == "" || path[0] == '.' || path[len(path)-1] == '.' {
		return false
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case c == '.' && path[i-1] != '.':
		default:
			return false
		}
	}
	return true
}

// indexObject indexes the keys of obj, an object inside a message Index
// found valid (a granule, a file), when index is set: Get then answers a
// key from the index as gjson.Result.Get does by scanning. Otherwise, and
// for an object that lists a key twice, it is gjson alone.
func indexObject(obj gjson.Result, index bool) Msg {
	m := Msg{Result: obj}
	if !index || !obj.IsObject() {
		return m
	}
	if top, dup := keysOf(obj); !dup {
		m.idx = &msgIndex{top: top, sub: map[string]map[string]gjson.Result{}}
	}
	return m
}
