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
