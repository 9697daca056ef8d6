// Command pushdlq inspects, exports and replays the push-notification
// dead-letter queue.
package main

import (
	"os"

	"github.com/deadletter/deadletter/internal/cli/pushdlqcmd"
)

func main() { os.Exit(pushdlqcmd.Main()) }
