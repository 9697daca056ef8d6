package report_test

import (
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/report"
)

// A DLQ of two bursts, 10:00 and 16:00: the chart spans those hours, not
// a day, and its note names the hours between as holding no message.
func TestTheCreatedAtChartSaysItsSpanAndItsGap(t *testing.T) {
	const ten = int64(1_733_047_200_000) // 2024-12-01T10:00Z
	per := map[int64]int{}
	for m := range int64(20) {
		per[ten+m*60_000] = 2
		per[ten+6*3600_000+m*60_000] = 1
	}
	page := report.PushDLQPage(report.PushDLQ{CodeMinutes: map[int]map[int64]int{1004: per}}, "t", nil)
	note := page.Sections[0].Note
	for _, want := range []string{"It spans the messages' createdAt, 2024-12-01 10:00 to 2024-12-01 16:",
		"No message was created from 2024-12-01 10:"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	one := report.PushDLQPage(report.PushDLQ{CodeMinutes: map[int]map[int64]int{1004: {ten: 1, ten + 60_000: 1}}}, "t", nil)
	if strings.Contains(one.Sections[0].Note, "No message was created") {
		t.Errorf("a burst with no gap is said to have one: %q", one.Sections[0].Note)
	}
}
