package triage

import (
	"cmp"
	"slices"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/pushpolicy"
)

// BurstGap splits a code's failures into bursts: createdAt minutes more
// than 15 minutes apart (as pushdlq inspect's suggestion).
const BurstGap = 15 * time.Minute

// PushGroup is the messages of one error code in one burst, or the
// messages that cannot be replayed (malformed, no createdAt) by reason.
type PushGroup struct {
	Code    int // NoCode: no error code
	Problem pushpolicy.Reason
	Rule    PushRule
	Count   int
	// From and To are the burst's first and last createdAt minute (epoch
	// ms); HasWindow is false for a group without createdAt.
	From, To  int64
	HasWindow bool
	// Templates are the errorMessages' classes (dla.ErrorClass), by count.
	Templates  map[string]int
	Priorities map[int]int
}

// Window is the replay window that selects exactly the burst: its first
// minute to the end of its last, RFC 3339, as inspect suggests. The
// inclusive end (the next minute's first millisecond) takes no message of
// the code that is not the burst's: that minute would be the burst's.
func (g *PushGroup) Window() string {
	end := time.UnixMilli(g.To).UTC().Add(time.Minute).Format(time.RFC3339)
	if g.To+60_000 > maxCreatedAt { // the last minute of the year 9999
		end = time.UnixMilli(maxCreatedAt).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	return time.UnixMilli(g.From).UTC().Format(time.RFC3339) + "/" + end
}

// SortedTemplates are the templates, the most frequent first.
func (g *PushGroup) SortedTemplates() []string {
	out := make([]string, 0, len(g.Templates))
	for t := range g.Templates {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(g.Templates[b], g.Templates[a]), cmp.Compare(a, b)) })
	return out
}

// Verdict is the group's verdict in words.
func (g *PushGroup) Verdict() string {
	switch {
	case g.Problem != pushpolicy.ReasonNone:
		return "never as it is: " + string(g.Problem) + " (no replay selects it)"
	case g.Rule.Class == Transient:
		return "retry now: replay this burst once the cause is gone"
	case g.Rule.Class == Permanent:
		return "never as it is: a replay fails the same way"
	}
	return "unknown: no rule; look at the messages before replaying"
}

type pushKey struct {
	code    int
	minute  int64
	problem pushpolicy.Reason
}

// PushTriage accumulates a DLQ's messages.
type PushTriage struct {
	Total      int
	minutes    map[pushKey]int
	templates  map[pushKey]map[string]int
	priorities map[pushKey]map[int]int
}

// NewPush starts a push triage.
func NewPush() *PushTriage {
	return &PushTriage{minutes: map[pushKey]int{}, templates: map[pushKey]map[string]int{}, priorities: map[pushKey]map[int]int{}}
}

// maxCreatedAt is the last millisecond a replay window can name
// (9999-12-31T23:59:59.999Z): a createdAt past it, or before 1970, is in
// no window.
const maxCreatedAt = 253402300799999

// Add counts one message.
func (t *PushTriage) Add(c pushpolicy.Command) {
	t.Total++
	k := pushKey{code: NoCode}
	if c.HasErrorCode {
		k.code = c.ErrorCode
	}
	switch {
	case c.Problem.Malformed() || c.Problem == pushpolicy.ReasonBadErrorCode:
		k = pushKey{code: k.code, problem: c.Problem}
	case c.HasCreatedAt && (c.CreatedAt < 0 || c.CreatedAt > maxCreatedAt):
		k.problem = pushpolicy.ReasonBadCreatedAt
	case c.HasCreatedAt:
		k.minute = c.CreatedAt - c.CreatedAt%60_000
	default:
		k.problem = pushpolicy.ReasonNoCreatedAt
	}
	t.minutes[k]++
	if t.templates[k] == nil {
		t.templates[k], t.priorities[k] = map[string]int{}, map[int]int{}
	}
	tpl := dla.ErrorClass(c.ErrorMessage)
	if !c.HasErrorMeta {
		tpl = "(no error metadata)"
	}
	t.templates[k][tpl]++
	if c.HasPriority {
		t.priorities[k][c.Priority]++
	}
}

// Groups are the bursts of each code, then the groups no replay selects;
// the largest first.
func (t *PushTriage) Groups() []*PushGroup {
	byCode := map[int][]int64{}
	var out []*PushGroup
	problems := map[pushKey]*PushGroup{}
	for k := range t.minutes {
		if k.problem != pushpolicy.ReasonNone {
			pk := pushKey{code: k.code, problem: k.problem}
			g := problems[pk]
			if g == nil {
				g = &PushGroup{Code: k.code, Problem: k.problem, Rule: PushRule{k.code, Permanent, "the message cannot be replayed: " + string(k.problem)},
					Templates: map[string]int{}, Priorities: map[int]int{}}
				problems[pk] = g
				out = append(out, g)
			}
			t.merge(g, k)
			continue
		}
		byCode[k.code] = append(byCode[k.code], k.minute)
	}
	var bursts []*PushGroup
	for code, minutes := range byCode {
		slices.Sort(minutes)
		var g *PushGroup
		for i, m := range minutes {
			if i == 0 || m-minutes[i-1] > BurstGap.Milliseconds() {
				g = &PushGroup{Code: code, From: m, HasWindow: true, Templates: map[string]int{}, Priorities: map[int]int{}}
				bursts = append(bursts, g)
			}
			g.To = m
			t.merge(g, pushKey{code: code, minute: m})
		}
	}
	for _, g := range bursts {
		late := false
		if g.Code == NotificationNotFound {
			gap := BurstGap.Milliseconds()
			for _, o := range bursts {
				if r := ClassifyPush(o.Code, false); r.Class == Transient && o.From <= g.To+gap && g.From <= o.To+gap {
					late = true
				}
			}
		}
		g.Rule = ClassifyPush(g.Code, late)
	}
	out = append(out, bursts...)
	slices.SortFunc(out, func(a, b *PushGroup) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Code, b.Code), cmp.Compare(a.From, b.From), cmp.Compare(a.Problem, b.Problem))
	})
	return out
}

func (t *PushTriage) merge(g *PushGroup, k pushKey) {
	g.Count += t.minutes[k]
	for tpl, n := range t.templates[k] {
		g.Templates[tpl] += n
	}
	for p, n := range t.priorities[k] {
		g.Priorities[p] += n
	}
}
