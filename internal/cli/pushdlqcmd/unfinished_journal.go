package pushdlqcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/sqsmove"
)

// UnfinishedReplayError refuses a fresh replay of a DLQ whose earlier
// replay was killed: its journal (in the state directory, where a replay
// without --journal keeps it) shows messages it held or sent without a
// known end, which a fresh replay would send again. Its message is the
// command that resumes that run instead.
type UnfinishedReplayError struct {
	Journal          string
	Held, Unresolved int
	Command          string
}

func (e *UnfinishedReplayError) Error() string {
	return fmt.Sprintf("an earlier replay of this DLQ did not finish (killed, or still running): its journal %s shows %s held and %s sent with no known outcome, "+
		"which a fresh replay would send again. Resume that run instead (what the journal shows as sent is deleted from the DLQ, not sent again):\n  %s\n"+
		"(once that run is resumed, or if it is no longer wanted, move its journal out of %s)",
		e.Journal, output.Plural(e.Held, "message"), output.Plural(e.Unresolved, "message"), e.Command, filepath.Dir(e.Journal))
}

// unfinishedReplay finds, for a fresh replay of the DLQ dlq (a name or a
// URL), the newest journal in the state directory of a run of that DLQ
// that did not finish and left messages held or unresolved: nil when
// there is none (or no state directory). A journal another run holds
// locked is being written now, and is left out.
func unfinishedReplay(opts *ReplayOptions, dlq string) error {
	dir, err := opts.Factory.StateDir()
	if err != nil || dlq == "" {
		return nil
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "replay-*.ndjson"))
	sort.Sort(sort.Reverse(sort.StringSlice(paths))) // newest first: the names start with the time
	name := sqsmove.Name(dlq)
	for _, p := range paths {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue
		}
		j, err := sqsmove.ReadJournal(p)
		if err != nil || j.Lines == 0 || j.LastFinished || len(j.Held)+len(j.Uncertain) == 0 {
			continue
		}
		ours := false
		for _, src := range j.Sources {
			ours = ours || src == dlq || sqsmove.Name(src) == name
		}
		if !ours {
			continue
		}
		unlock, err := sqsmove.LockJournal(p)
		if err != nil {
			continue // another replay is writing it now
		}
		unlock()
		return &UnfinishedReplayError{Journal: p, Held: len(j.Held), Unresolved: len(j.Uncertain), Command: resumeCommand(opts, p, 0)}
	}
	return nil
}
