package pushdlqcmd

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/deadletter/deadletter/internal/pushpolicy"
)

// tally counts what a scan saw; inspect prints it.
type tally struct {
	Scanned         int
	ByCode          map[int]int // -1: no errorCode
	ByPriority      map[int]int
	ByAction        map[string]int
	ByForm          map[pushpolicy.CreatedAtForm]int
	Hourly          map[int64]int // hour start, epoch ms
	Problems        map[pushpolicy.Reason]int
	NoErrorMetadata int
	MinCreated      int64
	MaxCreated      int64
	HasCreated      bool
	codeMinutes     map[int]map[int64]int // per code: messages per createdAt minute
}

func newTally() *tally {
	return &tally{
		ByCode: map[int]int{}, ByPriority: map[int]int{}, ByAction: map[string]int{}, ByForm: map[pushpolicy.CreatedAtForm]int{},
		Hourly: map[int64]int{}, Problems: map[pushpolicy.Reason]int{}, codeMinutes: map[int]map[int64]int{},
	}
}

func codeOf(c pushpolicy.Command) int {
	if c.HasErrorCode {
		return c.ErrorCode
	}
	return -1
}

// add counts one message's contents.
func (t *tally) add(c pushpolicy.Command) {
	t.Scanned++
	if c.Problem.Malformed() {
		t.Problems[c.Problem]++
	}
	if !c.HasErrorMeta && c.Problem != pushpolicy.ReasonBodyNotJSON && c.Problem != pushpolicy.ReasonBodyNotObject {
		t.NoErrorMetadata++
	}
	if c.Problem == pushpolicy.ReasonBodyNotJSON || c.Problem == pushpolicy.ReasonBodyNotObject {
		return
	}
	code := codeOf(c)
	t.ByCode[code]++
	if c.HasPriority {
		t.ByPriority[c.Priority]++
	}
	action := c.Action
	if action == "" {
		action = "(none)"
	}
	t.ByAction[action]++
	if c.HasCreatedAt {
		t.ByForm[c.CreatedAtForm]++
		if !t.HasCreated {
			t.MinCreated, t.MaxCreated, t.HasCreated = c.CreatedAt, c.CreatedAt, true
		}
		t.MinCreated, t.MaxCreated = min(t.MinCreated, c.CreatedAt), max(t.MaxCreated, c.CreatedAt)
		t.Hourly[c.CreatedAt-mod(c.CreatedAt, 3600_000)]++
		if t.codeMinutes[code] == nil {
			t.codeMinutes[code] = map[int64]int{}
		}
		t.codeMinutes[code][c.CreatedAt-mod(c.CreatedAt, 60_000)]++
	}
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// suggestion is the window and codes inspect suggests for the dominant
// failure: the most frequent error code, and the busiest burst of it (its
// createdAt minutes, split wherever 15 minutes pass without one), widened
// to whole minutes. Stragglers outside the burst are counted, not
// included: a narrow window is the runbook's first rule.
type suggestion struct {
	Code     int    `json:"code"`
	Name     string `json:"name"`
	Count    int    `json:"count"`     // messages with the code
	InWindow int    `json:"in_window"` // of those, inside the suggested window
	Window   string `json:"window"`
}

// burstGap splits bursts of failures.
const burstGap = 15 * 60_000

func (t *tally) suggest() *suggestion {
	best, bestN := 0, 0
	for code, n := range t.ByCode {
		if code < 0 || len(t.codeMinutes[code]) == 0 {
			continue
		}
		if n > bestN || (n == bestN && code < best) {
			best, bestN = code, n
		}
	}
	if bestN == 0 {
		return nil
	}
	minutes := make([]int64, 0, len(t.codeMinutes[best]))
	for m := range t.codeMinutes[best] {
		minutes = append(minutes, m)
	}
	slices.Sort(minutes)
	var from, to, bestFrom, bestTo int64
	n, bestBurst := 0, -1
	for i, m := range minutes {
		if i == 0 || m-minutes[i-1] > burstGap {
			from, n = m, 0
		}
		to = m
		n += t.codeMinutes[best][m]
		if n > bestBurst {
			bestFrom, bestTo, bestBurst = from, to, n
		}
	}
	start := time.UnixMilli(bestFrom).UTC()
	end := time.UnixMilli(bestTo).UTC().Add(time.Minute)
	return &suggestion{Code: best, Name: pushpolicy.CodeName(best), Count: bestN, InWindow: bestBurst,
		Window: start.Format(time.RFC3339) + "/" + end.Format(time.RFC3339)}
}

// count is one row of a grouped count in JSON output.
type count struct {
	Key   string `json:"key"`
	Name  string `json:"name,omitempty"`
	Count int    `json:"count"`
}

func codeLabel(code int) (string, string) {
	if code < 0 {
		return "-", "(no errorCode)"
	}
	name := pushpolicy.CodeName(code)
	if name == "" {
		name = "(not in the code table)"
	}
	return strconv.Itoa(code), name
}

func byCount[K cmp.Ordered](m map[K]int, label func(K) (string, string)) []count {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	out := make([]count, len(keys))
	for i, k := range keys {
		key, name := label(k)
		out[i] = count{Key: key, Name: name, Count: m[k]}
	}
	return out
}

func plainLabel[K any](k K) (string, string) { return fmt.Sprint(k), "" }

func reasonLabel(r pushpolicy.Reason) (string, string) { return string(r), r.Text() }

func isoMs(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
