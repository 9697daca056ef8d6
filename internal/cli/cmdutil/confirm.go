package cmdutil

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// RequireYes fails with a usage error when a mutating command cannot ask
// for confirmation and was not given --yes. Call it before touching
// anything, so that a script without --yes changes nothing.
func RequireYes(ios *iostreams.IOStreams, yes bool, what string) error {
	if yes || ios.CanPrompt() {
		return nil
	}
	return UsageErrorf("%s needs --yes when it cannot ask (stdin or stderr is not a terminal, or DEADLETTER_NO_PROMPT is set)", what)
}

// ErrNotConfirmed is the error of a command whose confirmation was
// answered with anything but its word, before it changed anything: Confirm
// said "not confirmed", the command what it left as it was, and the exit
// code is 1 (`help exit-codes`: nothing was done).
var ErrNotConfirmed = &ExitError{Code: ExitFailure}

// Confirm asks a question on stderr and reads the answer from stdin; only
// the word typed exactly (for example "yes") confirms. The default is no.
// Any other answer (y, an empty line, the end of stdin) is said to be no
// confirmation, naming the word to type.
func Confirm(ios *iostreams.IOStreams, question, word string) (bool, error) {
	// The question on a line of its own: one naming a file and a queue ran
	// past 80 columns with the prompt after it.
	fmt.Fprintf(ios.ErrOut, "%s\nType %q to continue: ", question, word)
	type answer struct {
		line string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(ios.In).ReadString('\n')
		answered <- answer{line, err}
	}()
	var a answer
	select {
	case a = <-answered:
	case <-ios.Interrupted:
		// Ctrl-C at the question: the read of stdin would wait for an
		// Enter that never comes, and the interrupt would go unanswered.
		fmt.Fprintln(ios.ErrOut)
		return false, context.Canceled
	}
	if a.err != nil && a.line == "" {
		fmt.Fprintln(ios.ErrOut)
	}
	if strings.TrimSpace(a.line) == word {
		return true, nil
	}
	fmt.Fprintf(ios.ErrOut, "not confirmed (type %s)\n", word)
	return false, nil
}
