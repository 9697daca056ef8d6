// Command dla searches, shows, summarises and recovers the Cumulus Dead
// Letter Archive. See `dla --help`.
package main

import (
	"os"

	"github.com/deadletter/deadletter/internal/cli/dla"
)

func main() { os.Exit(dla.Main()) }
