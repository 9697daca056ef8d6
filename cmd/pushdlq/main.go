// Command pushdlq inspects, exports and replays the push-notification
// dead-letter queue.
package main

import (
	"os"

	"github.com/deadletter/deadletter/internal/cli/pushdlq"
)

func main() { os.Exit(pushdlq.Main()) }
