// Command dla searches, shows, summarises and recovers the Cumulus Dead
// Letter Archive. See `dla --help`.
package main

import (
	"os"

	"github.com/deadletter/deadletter/internal/cli/dlacmd"
)

func main() { os.Exit(dlacmd.Main()) }
