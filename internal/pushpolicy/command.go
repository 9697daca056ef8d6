package pushpolicy

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/calendar"
)

// CreatedAtForm says how a message spelled its createdAt.
type CreatedAtForm string

const (
	CreatedAtEpochMs       CreatedAtForm = "epoch_ms"       // a JSON number
	CreatedAtNumericString CreatedAtForm = "numeric_string" // "1731573000000"
	CreatedAtISO8601       CreatedAtForm = "iso8601"        // "2025-11-14T08:30:00Z"
)

// Command is what the core reads from one DLQ message body: a
// FailedPushCommand (the original PushCommand plus errorCode and
// errorMessage), or a bare PushCommand that reached the DLQ by a manual
// redrive. The body itself is never rewritten: a replay sends the bytes it
// received, so fields the core does not know survive byte for byte.
type Command struct {
	Action        string        // "push" or "schedule" (kept as found)
	Priority      int           // the P<priority> of the target queue
	HasPriority   bool          // priority present and a whole number >= 0
	CreatedAt     int64         // epoch milliseconds
	CreatedAtForm CreatedAtForm // how createdAt was written; "" when absent or bad
	HasCreatedAt  bool
	ErrorCode     int
	HasErrorCode  bool // errorCode present and a whole number
	ErrorMessage  string
	HasErrorMeta  bool // errorCode or errorMessage present (the push Lambda wrote it)

	// Problem says why the body cannot be replayed ("" when it can): not
	// JSON, no priority, a bad createdAt, and so on. The decision reports
	// it as the reason.
	Problem Reason
	Detail  string // the offending value, for messages to operators
}

// ParseCommand reads a DLQ message body. It never fails: what is wrong
// with a body is recorded in Problem so that the message can be counted,
// reported and parked rather than lost.
func ParseCommand(body string) Command {
	var c Command
	trimmed := strings.TrimSpace(body)
	if trimmed == "" || !gjson.Valid(trimmed) {
		c.Problem, c.Detail = ReasonBodyNotJSON, snippet(body)
		return c
	}
	root := gjson.Parse(trimmed)
	if !root.IsObject() {
		c.Problem, c.Detail = ReasonBodyNotObject, snippet(body)
		return c
	}
	// One pass over the object; duplicate keys: the last one wins, as in
	// JSON.parse.
	var action, priority, createdAt, code, message gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "action":
			action = v
		case "priority":
			priority = v
		case "createdAt":
			createdAt = v
		case "errorCode":
			code = v
		case "errorMessage":
			message = v
		}
		return true
	})
	if action.Type == gjson.String {
		c.Action = action.Str
	}
	c.HasErrorMeta = code.Exists() || message.Exists()
	if message.Type == gjson.String {
		c.ErrorMessage = message.Str
	} else if message.Exists() && message.Type != gjson.Null {
		c.ErrorMessage = message.Raw
	}
	if code.Exists() && code.Type != gjson.Null {
		if n, ok := wholeNumber(code); ok && code.Type == gjson.Number {
			c.ErrorCode, c.HasErrorCode = int(n), true
		}
	}
	if n, ok := wholeNumber(priority); ok && n >= 0 && n <= math.MaxInt32 {
		c.Priority, c.HasPriority = int(n), true
	}
	c.CreatedAt, c.CreatedAtForm, c.HasCreatedAt = parseCreatedAt(createdAt)

	switch {
	case !priority.Exists() || priority.Type == gjson.Null:
		c.Problem = ReasonNoPriority
	case !c.HasPriority:
		c.Problem, c.Detail = ReasonBadPriority, priority.Raw
	case !createdAt.Exists() || createdAt.Type == gjson.Null:
		c.Problem = ReasonNoCreatedAt
	case !c.HasCreatedAt:
		c.Problem, c.Detail = ReasonBadCreatedAt, createdAt.Raw
	case code.Exists() && code.Type != gjson.Null && !c.HasErrorCode:
		c.Problem, c.Detail = ReasonBadErrorCode, code.Raw
	}
	return c
}

// wholeNumber reads a JSON number, or a string of digits, as an integer.
func wholeNumber(v gjson.Result) (int64, bool) {
	switch v.Type {
	case gjson.Number:
		f := v.Num
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	case gjson.String:
		n, err := strconv.ParseInt(strings.TrimSpace(v.Str), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// parseCreatedAt accepts epoch milliseconds as a number or a numeric
// string, and an ISO-8601 timestamp.
func parseCreatedAt(v gjson.Result) (int64, CreatedAtForm, bool) {
	switch v.Type {
	case gjson.Number:
		if n, ok := wholeNumber(v); ok {
			return n, CreatedAtEpochMs, true
		}
	case gjson.String:
		s := strings.TrimSpace(v.Str)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, CreatedAtNumericString, true
		}
		if t, err := ParseTime(s); err == nil {
			return t.UnixMilli(), CreatedAtISO8601, true
		}
	}
	return 0, "", false
}

// isoLayouts are the ISO-8601 forms accepted for createdAt, windows and the
// processor's PROCESS_START_AT / PROCESS_END_AT.
var isoLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02",
}

// ParseTime parses an ISO-8601 timestamp. A timestamp without a zone is
// read as UTC (an operator's window is never in the machine's local zone).
func ParseTime(s string) (time.Time, error) {
	for _, layout := range isoLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if err := calendar.NotADay(s); err != nil {
		return time.Time{}, err
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO-8601 time (want e.g. 2025-11-14T08:30:00Z)", s)
}

// snippet is the start of a bad body, short enough for one report line.
func snippet(body string) string {
	s := strings.TrimSpace(body)
	if len(s) <= 60 {
		return s
	}
	cut := 60
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
