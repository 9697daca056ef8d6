package dla

import (
	"bytes"
	"regexp"
	"strings"
)

// Filter selects records. Within a field the values are alternatives (any
// may match); the fields are combined with AND. The zero Filter matches all.
type Filter struct {
	Granules      []string       // exact granule ids
	Collections   []string       // name___version, or a name alone (any version)
	Executions    []string       // execution ARN, or execution name
	Statuses      []string       // Step Functions status, any case; "none" matches a missing status
	StateMachines []string       // state machine ARN, or its name
	Error         *regexp.Regexp // matched against the whole error text
	// ErrorClass, when set, is the one ErrorClass the record's error must
	// have ("" for a record without an error text): how triage's commands
	// select exactly one of its groups.
	ErrorClass *string
	From, To   string // inclusive YYYY-MM-DD bounds on the record's date; "" is open
}

// Match reports whether the record passes every filter.
func (f *Filter) Match(r *Record) bool {
	if len(f.Granules) > 0 && !anyGranule(r.Granules, f.Granules) {
		return false
	}
	if len(f.Collections) > 0 && !matchAny(f.Collections, func(c string) bool {
		if strings.Contains(c, "___") {
			return r.CollectionID == c
		}
		name, _, _ := strings.Cut(r.CollectionID, "___")
		return r.CollectionID != "" && name == c
	}) {
		return false
	}
	if len(f.Executions) > 0 && !matchAny(f.Executions, func(e string) bool {
		return r.ExecutionArn != "" && (r.ExecutionArn == e || r.ExecutionName() == e)
	}) {
		return false
	}
	if len(f.Statuses) > 0 && !matchAny(f.Statuses, func(s string) bool {
		if strings.EqualFold(s, "none") {
			return r.Status == ""
		}
		return strings.EqualFold(r.Status, s)
	}) {
		return false
	}
	if len(f.StateMachines) > 0 && !matchAny(f.StateMachines, func(s string) bool {
		return r.StateMachineArn != "" && (r.StateMachineArn == s || lastToken(r.StateMachineArn) == s)
	}) {
		return false
	}
	if f.Error != nil && !(r.HasError && f.Error.MatchString(r.Error)) {
		return false
	}
	if f.ErrorClass != nil && ErrorClass(r.Error) != *f.ErrorClass {
		return false
	}
	if f.From != "" || f.To != "" {
		d := r.Date()
		if d == "" || (f.From != "" && d < f.From) || (f.To != "" && d > f.To) {
			return false
		}
	}
	return true
}

// DateInRange reports whether a date folder can hold matching records.
func (f *Filter) DateInRange(date string) bool {
	return (f.From == "" || date >= f.From) && (f.To == "" || date <= f.To)
}

// Prefilter returns a cheap test on an object's raw bytes that is false only
// when the object cannot match: every exact-value filter needs one of its
// values to appear verbatim in the object. Values are used only when their
// characters are never escaped in JSON, at any nesting depth; otherwise that
// field does not prefilter. nil means no prefilter applies.
func (f *Filter) Prefilter() func(raw []byte) bool {
	var groups [][][]byte
	add := func(values []string, needle func(string) string) {
		var g [][]byte
		for _, v := range values {
			n := needle(v)
			if n == "" || !jsonSafe(n) {
				return // this field cannot prefilter
			}
			g = append(g, []byte(n))
		}
		if len(g) > 0 {
			groups = append(groups, g)
		}
	}
	same := func(s string) string { return s }
	add(f.Granules, same)
	// A derived collectionId is not in the object as such: only its name is.
	add(f.Collections, func(c string) string { name, _, _ := strings.Cut(c, "___"); return name })
	add(f.Executions, lastToken)
	add(f.StateMachines, lastToken)
	if len(groups) == 0 {
		return nil
	}
	return func(raw []byte) bool {
		for _, g := range groups {
			found := false
			for _, n := range g {
				if bytes.Contains(raw, n) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
}

// JSONSafe reports whether s appears verbatim in any JSON that holds it,
// at any nesting depth: printable ASCII that no JSON writer escapes
// (JavaScript escapes only '"' and '\'; Go also escapes '<', '>' and '&').
func JSONSafe(s string) bool { return jsonSafe(s) }

func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func anyGranule(have, want []string) bool {
	for _, h := range have {
		for _, w := range want {
			if h != "" && h == w {
				return true
			}
		}
	}
	return false
}

func matchAny(values []string, ok func(string) bool) bool {
	for _, v := range values {
		if ok(v) {
			return true
		}
	}
	return false
}

// ByContent reports whether the filter looks inside objects (anything but
// the date bounds), so that an object that cannot be decoded cannot be said
// to match it.
func (f *Filter) ByContent() bool {
	return len(f.Granules) > 0 || len(f.Collections) > 0 || len(f.Executions) > 0 || len(f.Statuses) > 0 ||
		len(f.StateMachines) > 0 || f.Error != nil || f.ErrorClass != nil
}
