package pushdlqcmd

import (
	"context"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

func complete(t *testing.T, args ...string) []string {
	t.Helper()
	ios, _, out, _ := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	if code := Run(context.Background(), f, append([]string{"__complete"}, args...)); code != 0 {
		t.Fatalf("pushdlq __complete %v: exit %d", args, code)
	}
	return strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
}

// TestCodesCompleteFromTheCodeTable pins the completion of --codes on
// every command that has it: the codes of the table with their names (and
// '*'), after a comma the codes not yet listed, and never file names
// (directive :4, ShellCompDirectiveNoFileComp).
func TestCodesCompleteFromTheCodeTable(t *testing.T) {
	for _, cmd := range [][]string{{"replay"}, {"trace"}, {"processor", "arm"}} {
		got := complete(t, append(cmd, "--codes", "")...)
		want := []string{"*\tevery code (a window over 24 hours needs --allow-wide-window)", "1001\tPublishFailed", "1004\tPushFailed",
			"2001\tProcessRecordFailed", "2002\tPushServiceNotSupported", "2003\tNotificationNotFound", "3001\tSqsSendFailed", "9000\tUnknown", ":4"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%v --codes '': got\n%s", cmd, strings.Join(got, "\n"))
		}
	}
	got := complete(t, "replay", "--codes", "1004,2003,")
	if got[0] != "1004,2003,1001\tPublishFailed" || got[len(got)-1] != ":4" || len(got) != 6 {
		t.Errorf("--codes 1004,2003,: got\n%s", strings.Join(got, "\n"))
	}
	if got := complete(t, "replay", "--window", ""); strings.Join(got, "\n") != ":4" {
		t.Errorf("--window offers %v", got)
	}
}
