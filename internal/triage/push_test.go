package triage

import (
	"strconv"
	"testing"

	"github.com/deadletter/deadletter/internal/pushpolicy"
)

func pushMsg(created string, code string) pushpolicy.Command {
	body := `{"action":"push","priority":1,"createdAt":` + created
	if code != "" {
		body += `,"errorCode":` + code + `,"errorMessage":"m"`
	}
	return pushpolicy.ParseCommand(body + "}")
}

// A createdAt no replay window can name (before 1970, after 9999, the
// int64 extremes) is a group of its own without a window, not a window
// replay refuses; a real errorCode -1 is not "no error code".
func TestPushTriageWindowsAreAlwaysOnesReplayAccepts(t *testing.T) {
	tr := NewPush()
	for _, created := range []string{"253402300800000", "9007199254740992", `"9999-12-31T23:59:30Z"`, `"-9223372036854775808"`, "-1", "1763109060000"} {
		tr.Add(pushMsg(created, "1004"))
	}
	tr.Add(pushMsg("1763109060000", "-1"))
	tr.Add(pushMsg("1763109060000", ""))
	windows, noWindow := 0, 0
	codes := map[int]int{}
	for _, g := range tr.Groups() {
		codes[g.Code] += g.Count
		if !g.HasWindow {
			noWindow += g.Count
			continue
		}
		windows++
		if _, _, err := pushpolicy.ParseWindow(g.Window()); err != nil {
			t.Errorf("code %d: window %s: %v", g.Code, g.Window(), err)
		}
	}
	if noWindow != 4 {
		t.Errorf("%d messages without a window, want the 4 out of range", noWindow)
	}
	if codes[-1] != 1 || codes[NoCode] != 1 || codes[1004] != 6 {
		t.Errorf("by code: %v", codes)
	}
	if r := ClassifyPush(-1, false); r.Class != Unknown || r.Why == PushRules[len(PushRules)-1].Why {
		t.Errorf("code -1 reads as no code: %+v", r)
	}
}

// 2003 is transient when its burst overlaps, or comes within the burst gap
// of, a burst of a transient code; otherwise permanent.
func TestNotificationNotFoundIsJudgedFromTheBursts(t *testing.T) {
	const base = int64(1763109060000) // 2025-11-14T08:31:00Z
	min := func(m int64) string { return strconv.FormatInt(base+m*60_000, 10) }
	tr := NewPush()
	tr.Add(pushMsg(min(0), "1004"))
	tr.Add(pushMsg(min(5), "1004"))
	tr.Add(pushMsg(min(3), "2003"))     // inside 1004's burst
	tr.Add(pushMsg(min(24*60), "2003")) // a day later, alone
	tr.Add(pushMsg(min(24*60), "2001")) // with an unknown code only
	for _, g := range tr.Groups() {
		if g.Code != NotificationNotFound {
			continue
		}
		want := Permanent
		if g.From == base+3*60_000 {
			want = Transient
		}
		if g.Rule.Class != want {
			t.Errorf("2003 at %d: %s, want %s", g.From, g.Rule.Class, want)
		}
	}
}
