package pushdlqcmd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestMain gives the package's runs a home of their own: a test whose
// factory reads no environment keeps its journals and audit records under
// $HOME/.local/state/deadletter, and the replay guard counts the replays
// recorded there: the parity corpus's notification ids, replayed by run
// after run, would be held back.
//
// The go tool keeps its caches where they were, for the kill tests' build
// of pushdlq.
func TestMain(m *testing.M) {
	if err := testsupport.KeepGoToolCaches(); err != nil {
		panic(err)
	}
	home, err := os.MkdirTemp("", "pushdlqcmd-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	code := m.Run()
	testsupport.RemoveBinaries()
	os.RemoveAll(home)
	os.Exit(code)
}
