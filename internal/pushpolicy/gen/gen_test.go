package gen

import (
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/pushpolicy"
)

func TestGenerateMixIsDeterministicAndParses(t *testing.T) {
	start := time.Date(2025, 11, 14, 8, 30, 0, 0, time.UTC)
	var first []string
	codes := map[int]int{}
	Generate(Options{Count: 1000, Seed: 7, Start: start}, func(i int, body string) {
		first = append(first, body)
		c := pushpolicy.ParseCommand(body)
		if c.Problem != "" {
			t.Fatalf("body %d: %s %s", i, c.Problem, body)
		}
		codes[c.ErrorCode]++
	})
	Generate(Options{Count: 1000, Seed: 7, Start: start}, func(i int, body string) {
		if body != first[i] {
			t.Fatalf("not deterministic at %d", i)
		}
	})
	if codes[1004] < 650 || codes[2003] < 60 || codes[1001] < 60 || codes[0] < 20 {
		t.Errorf("mix %v", codes)
	}
}

// The corpus's own expectations agree with the core's decision, and it
// covers what the parity test promises (the processor-vs-CLI parity test
// is in internal/processor/pushdlq).
func TestParityCorpusCoversAndAgreesWithDecide(t *testing.T) {
	cases := Parity(300, 1)
	if len(cases) < 300 {
		t.Fatalf("%d cases", len(cases))
	}
	start, end := ParityStart.UnixMilli(), ParityEnd.UnixMilli()
	_, codes, _ := pushpolicy.ParseCodes(ParityCodes)
	reasons := map[pushpolicy.Reason]int{}
	forms := map[pushpolicy.CreatedAtForm]int{}
	for _, all := range []bool{false, true} {
		p := pushpolicy.Policy{Start: start, End: end, AllCodes: all, Codes: codes}
		for _, c := range cases {
			el, prio, reason := c.Expect(all, codes, start, end)
			cmd := pushpolicy.ParseCommand(c.Body)
			d := pushpolicy.Decide(cmd, p, "b-")
			want := pushpolicy.Decision{Eligible: el, Reason: reason}
			if el {
				want.Target = pushpolicy.TargetURL("b-", prio)
			}
			if d != want {
				t.Errorf("%s (all=%v): %s: decided %+v, want %+v", c.Label, all, c.Body, d, want)
			}
			reasons[d.Reason]++
			forms[cmd.CreatedAtForm]++
		}
	}
	for r := range map[pushpolicy.Reason]bool{"": true, pushpolicy.ReasonBodyNotJSON: true, pushpolicy.ReasonBodyNotObject: true, pushpolicy.ReasonNoPriority: true,
		pushpolicy.ReasonBadPriority: true, pushpolicy.ReasonNoCreatedAt: true, pushpolicy.ReasonBadCreatedAt: true, pushpolicy.ReasonBadErrorCode: true,
		pushpolicy.ReasonNoErrorMetadata: true, pushpolicy.ReasonNoErrorCode: true, pushpolicy.ReasonCodeNotSelected: true,
		pushpolicy.ReasonBeforeWindow: true, pushpolicy.ReasonAfterWindow: true} {
		if reasons[r] == 0 {
			t.Errorf("no case decided %q", r)
		}
	}
	if forms[pushpolicy.CreatedAtEpochMs] == 0 || forms[pushpolicy.CreatedAtNumericString] == 0 || forms[pushpolicy.CreatedAtISO8601] == 0 {
		t.Errorf("createdAt forms %v", forms)
	}
}
