package dlacmd

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// A verb's run is driven from its options struct alone, without cobra:
// what a runbook's Go program, or another command, would do.
func TestTriageRunsFromItsOptionsWithoutCobra(t *testing.T) {
	ios, _, out, errOut := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	f.Now = func() time.Time { return time.Date(2024, 3, 6, 0, 0, 0, 0, time.UTC) }
	opts := &TriageOptions{Factory: f, Output: &cmdutil.Output{Value: "json"},
		Select: selectFlags{archiveFlag: archiveFlag{value: sampleArchive}, concurrency: 4}}
	// Exit 3: the sample holds unreadable objects.
	if err := runTriage(context.Background(), opts); cmdutil.ExitCode(err) != cmdutil.ExitPartial {
		t.Fatalf("%v: %s", err, errOut.String())
	}
	var rep TriageReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Total != 71 || len(rep.Groups) != 8 {
		t.Fatalf("triage without cobra: %v, %d objects in %d groups", err, rep.Total, len(rep.Groups))
	}
}
