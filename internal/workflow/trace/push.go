package trace

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/deadletter/deadletter/internal/pushpolicy"
)

// What `pushdlq trace` says of one notification: each DLQ message of it
// and whether a policy (a --window and --codes) would replay it, decided
// by pushpolicy.Decide as replay and the push-dlq processor decide.

// PushMessage is one DLQ message of the traced notification.
type PushMessage struct {
	MessageID    string  `json:"message_id"`
	Code         *int    `json:"error_code"` // null: no errorCode
	CodeName     string  `json:"error_name"`
	ErrorMessage string  `json:"error_message"`
	CreatedAt    *int64  `json:"created_at_ms"` // null: none, or not readable
	Priority     *int    `json:"priority"`
	ReceiveCount int     `json:"receive_count"` // ApproximateReceiveCount when received (this trace's receive included)
	Replayed     bool    `json:"replayed"`      // the policy would replay it
	Reason       string  `json:"reason"`        // why not, in words ("" when replayed)
	Target       *string `json:"target"`        // the priority queue it would go to
}

// NotificationOf is a DLQ body's notificationId ("" when it has none).
// A key given twice is read as JSON.parse and ParseCommand read it: the
// last one wins. A body that is not JSON is searched as gjson finds it, so
// that a truncated body naming the notification is still listed (judged
// not replayable).
func NotificationOf(body string) string { return pushpolicy.NotificationID(body) }

// PushMessageOf reads one DLQ message of the notification and decides it
// under policy (base: the priority queues' base URL).
func PushMessageOf(id, body, receiveCount string, policy pushpolicy.Policy, base string) PushMessage {
	c := pushpolicy.ParseCommand(body)
	m := PushMessage{MessageID: id, ErrorMessage: c.ErrorMessage}
	m.ReceiveCount, _ = strconv.Atoi(receiveCount)
	if c.HasErrorCode {
		code := c.ErrorCode
		m.Code, m.CodeName = &code, pushpolicy.CodeName(code)
	}
	if c.HasCreatedAt {
		at := c.CreatedAt
		m.CreatedAt = &at
	}
	if c.HasPriority {
		p := c.Priority
		m.Priority = &p
	}
	d := pushpolicy.Decide(c, policy, base)
	m.Replayed = d.Eligible
	if d.Eligible {
		m.Target = &d.Target
	} else {
		m.Reason = d.Reason.Text()
	}
	return m
}

// SortPush orders a notification's messages oldest first (by createdAt,
// then message id).
func SortPush(ms []PushMessage) {
	at := func(m PushMessage) int64 {
		if m.CreatedAt == nil {
			return 0
		}
		return *m.CreatedAt
	}
	slices.SortFunc(ms, func(a, b PushMessage) int {
		return cmp.Or(cmp.Compare(at(a), at(b)), cmp.Compare(a.MessageID, b.MessageID))
	})
}

// CoveringPolicy is the narrowest policy that would replay every message
// of bodies that a policy can replay: their createdAt range and their
// error codes. ok is false when none can (no createdAt, or no code).
// It is one replay's --window and --codes accept: a window that ends
// after it starts (one millisecond long when every createdAt is the
// same), and only codes --codes can name (a negative code cannot be
// listed: its message is left out, judged not selected).
func CoveringPolicy(bodies []string) (p pushpolicy.Policy, ok bool) {
	for _, b := range bodies {
		c := pushpolicy.ParseCommand(b)
		if c.Problem != pushpolicy.ReasonNone || !c.HasErrorCode || c.ErrorCode < 0 {
			continue
		}
		if !ok || c.CreatedAt < p.Start {
			p.Start = c.CreatedAt
		}
		if !ok || c.CreatedAt > p.End {
			p.End = c.CreatedAt
		}
		if !slices.Contains(p.Codes, c.ErrorCode) {
			p.Codes = append(p.Codes, c.ErrorCode)
		}
		ok = true
	}
	if ok && p.End <= p.Start {
		p.End = p.Start + 1
	}
	slices.Sort(p.Codes)
	return p, ok
}
