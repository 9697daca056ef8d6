package gen

import (
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/pushdlq"
)

func TestGenerateMixIsDeterministicAndParses(t *testing.T) {
	start := time.Date(2025, 11, 14, 8, 30, 0, 0, time.UTC)
	var first []string
	codes := map[int]int{}
	Generate(Options{Count: 1000, Seed: 7, Start: start}, func(i int, body string) {
		first = append(first, body)
		c := pushdlq.ParseCommand(body)
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
	_, codes, _ := pushdlq.ParseCodes(ParityCodes)
	reasons := map[pushdlq.Reason]int{}
	forms := map[pushdlq.CreatedAtForm]int{}
	for _, all := range []bool{false, true} {
		p := pushdlq.Policy{Start: start, End: end, AllCodes: all, Codes: codes}
		for _, c := range cases {
			el, prio, reason := c.Expect(all, codes, start, end)
			cmd := pushdlq.ParseCommand(c.Body)
			d := pushdlq.Decide(cmd, p, "b-")
			want := pushdlq.Decision{Eligible: el, Reason: reason}
			if el {
				want.Target = pushdlq.TargetURL("b-", prio)
			}
			if d != want {
				t.Errorf("%s (all=%v): %s: decided %+v, want %+v", c.Label, all, c.Body, d, want)
			}
			reasons[d.Reason]++
			forms[cmd.CreatedAtForm]++
		}
	}
	for r := range map[pushdlq.Reason]bool{"": true, pushdlq.ReasonBodyNotJSON: true, pushdlq.ReasonBodyNotObject: true, pushdlq.ReasonNoPriority: true,
		pushdlq.ReasonBadPriority: true, pushdlq.ReasonNoCreatedAt: true, pushdlq.ReasonBadCreatedAt: true, pushdlq.ReasonBadErrorCode: true,
		pushdlq.ReasonNoErrorMetadata: true, pushdlq.ReasonNoErrorCode: true, pushdlq.ReasonCodeNotSelected: true,
		pushdlq.ReasonBeforeWindow: true, pushdlq.ReasonAfterWindow: true} {
		if reasons[r] == 0 {
			t.Errorf("no case decided %q", r)
		}
	}
	if forms[pushdlq.CreatedAtEpochMs] == 0 || forms[pushdlq.CreatedAtNumericString] == 0 || forms[pushdlq.CreatedAtISO8601] == 0 {
		t.Errorf("createdAt forms %v", forms)
	}
}
