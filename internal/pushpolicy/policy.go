package pushpolicy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reason says why a message is not eligible for replay. The values are
// stable: they appear in JSON output and in the journal.
type Reason string

const (
	ReasonNone            Reason = ""
	ReasonBodyNotJSON     Reason = "body_not_json"
	ReasonBodyNotObject   Reason = "body_not_object"
	ReasonNoPriority      Reason = "no_priority"
	ReasonBadPriority     Reason = "bad_priority"
	ReasonNoCreatedAt     Reason = "no_created_at"
	ReasonBadCreatedAt    Reason = "bad_created_at"
	ReasonBadErrorCode    Reason = "bad_error_code"
	ReasonNoErrorMetadata Reason = "no_error_metadata" // a manual redrive: only '*' replays it
	ReasonNoErrorCode     Reason = "no_error_code"     // errorMessage without errorCode: only '*'
	ReasonCodeNotSelected Reason = "code_not_selected"
	ReasonBeforeWindow    Reason = "before_window"
	ReasonAfterWindow     Reason = "after_window"
)

var reasonText = map[Reason]string{
	ReasonBodyNotJSON:     "body is not JSON",
	ReasonBodyNotObject:   "body is JSON but not an object",
	ReasonNoPriority:      "no priority",
	ReasonBadPriority:     "priority is not a whole number >= 0",
	ReasonNoCreatedAt:     "no createdAt",
	ReasonBadCreatedAt:    "createdAt is neither epoch milliseconds nor ISO-8601",
	ReasonBadErrorCode:    "errorCode is not a number",
	ReasonNoErrorMetadata: "no errorCode/errorMessage (manual redrive; only --codes '*' replays it)",
	ReasonNoErrorCode:     "errorMessage without errorCode (only --codes '*' replays it)",
	ReasonCodeNotSelected: "error code not selected",
	ReasonBeforeWindow:    "createdAt before the window",
	ReasonAfterWindow:     "createdAt after the window",
}

// Text is the reason in words.
func (r Reason) Text() string {
	if t, ok := reasonText[r]; ok {
		return t
	}
	return string(r)
}

// Malformed reports whether the reason is a defect of the body itself,
// which no policy can make eligible.
func (r Reason) Malformed() bool {
	switch r {
	case ReasonBodyNotJSON, ReasonBodyNotObject, ReasonNoPriority, ReasonBadPriority,
		ReasonNoCreatedAt, ReasonBadCreatedAt, ReasonBadErrorCode:
		return true
	}
	return false
}

// ParkDelaySeconds is the delay an ineligible message is parked with, so
// that the processor does not loop on it.
const ParkDelaySeconds = 900

// MaxWildcardWindow is the widest window '*' may be used with unless the
// operator insists: a wide window with every code resurrects old failures.
const MaxWildcardWindow = 24 * time.Hour

// Policy is what the processor's environment configures: an inclusive
// createdAt window in epoch milliseconds and the codes to replay.
type Policy struct {
	Start, End int64 // inclusive, epoch ms
	AllCodes   bool  // PROCESS_ERROR_CODES='*' (processAllErrors)
	Codes      []int
}

// AllowsCode reports whether a code is selected.
func (p Policy) AllowsCode(code int) bool { return p.AllCodes || slices.Contains(p.Codes, code) }

// Window is the policy's window as times.
func (p Policy) Window() (time.Time, time.Time) {
	return time.UnixMilli(p.Start).UTC(), time.UnixMilli(p.End).UTC()
}

// CodesString is the codes as PROCESS_ERROR_CODES spells them.
func (p Policy) CodesString() string {
	if p.AllCodes {
		return "*"
	}
	s := make([]string, len(p.Codes))
	for i, c := range p.Codes {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// Validate checks the window and the guardrail on '*': a window of more
// than 24 hours with every code needs allowWide.
func (p Policy) Validate(allowWide bool) error {
	if p.Start >= p.End {
		s, e := p.Window()
		return fmt.Errorf("the window must start before it ends (start %s, end %s)", s.Format(time.RFC3339Nano), e.Format(time.RFC3339Nano))
	}
	if !p.AllCodes && len(p.Codes) == 0 {
		return fmt.Errorf("no error codes selected")
	}
	if width := time.Duration(p.End-p.Start) * time.Millisecond; p.AllCodes && width > MaxWildcardWindow && !allowWide {
		return fmt.Errorf("codes '*' with a %s window would replay every failure in it; narrow the window to 24h or less, name the codes, or pass --allow-wide-window", width)
	}
	return nil
}

// Decision is what happens to one message.
type Decision struct {
	Eligible bool
	Reason   Reason // why not, when not eligible
	Target   string // the priority queue URL, when eligible
}

// Decide applies the policy to a parsed message, as the push-dlq processor
// does: eligible when the body is usable, the code is selected and
// createdAt is inside the inclusive window. Eligible messages go to
// TargetURL(base, priority); the rest are parked.
func Decide(c Command, p Policy, base string) Decision {
	switch {
	case c.Problem != ReasonNone:
		return Decision{Reason: c.Problem}
	case !c.HasErrorMeta && !p.AllCodes:
		return Decision{Reason: ReasonNoErrorMetadata}
	case !c.HasErrorCode && !p.AllCodes:
		return Decision{Reason: ReasonNoErrorCode}
	case c.HasErrorCode && !p.AllowsCode(c.ErrorCode):
		return Decision{Reason: ReasonCodeNotSelected}
	case c.CreatedAt < p.Start:
		return Decision{Reason: ReasonBeforeWindow}
	case c.CreatedAt > p.End:
		return Decision{Reason: ReasonAfterWindow}
	}
	return Decision{Eligible: true, Target: TargetURL(base, c.Priority)}
}

// TargetURL is the priority queue a command is replayed to.
func TargetURL(base string, priority int) string {
	return base + "P" + strconv.Itoa(priority)
}

// ParseCodes reads PROCESS_ERROR_CODES / --codes: "1004,2003" or "*".
func ParseCodes(s string) (all bool, codes []int, err error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return true, nil, nil
	}
	if s == "" {
		return false, nil, fmt.Errorf("empty: want a comma-separated list of codes, or '*'")
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "*" {
			return false, nil, fmt.Errorf(`"*" means all codes and cannot be combined with others: pass '*' alone, or list the codes (e.g. 1004,2003)`)
		}
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return false, nil, fmt.Errorf("%q is not an error code: want a comma-separated list of codes (e.g. 1004,2003), or '*'", part)
		}
		if !slices.Contains(codes, n) {
			codes = append(codes, n)
		}
	}
	return false, codes, nil
}

// ParseInstant reads one end of a window: ISO-8601, or epoch milliseconds.
func ParseInstant(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	t, err := ParseTime(s)
	if err != nil {
		return 0, err
	}
	return t.UnixMilli(), nil
}

// IsDateOnly reports a window end written as a date alone (2025-11-15),
// which means midnight UTC at the start of that day.
func IsDateOnly(s string) bool {
	_, err := time.Parse("2006-01-02", strings.TrimSpace(s))
	return err == nil
}

// ParseWindow reads START/END, each ISO-8601 or epoch milliseconds. A date
// alone is midnight UTC at the start of that day, at either end: the
// window 2025-11-14/2025-11-15 ends at 2025-11-15T00:00:00.000Z.
func ParseWindow(s string) (start, end int64, err error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok || strings.TrimSpace(a) == "" || strings.TrimSpace(b) == "" {
		return 0, 0, fmt.Errorf("window %q: want START/END, e.g. 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z", s)
	}
	if start, err = ParseInstant(a); err != nil {
		return 0, 0, fmt.Errorf("window start: %w", err)
	}
	if end, err = ParseInstant(b); err != nil {
		return 0, 0, fmt.Errorf("window end: %w", err)
	}
	return start, end, nil
}
