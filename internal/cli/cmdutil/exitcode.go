// Package cmdutil is the CLI plumbing shared by dla and pushdlq: exit codes
// and the errors that carry them, AWS flags, output flags and progress.
package cmdutil

import (
	"context"
	"errors"
	"fmt"

	"github.com/deadletter/deadletter/internal/awsconfig"
)

// Exit codes, documented by `help exit-codes`.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitPartial     = 3
	ExitAuth        = 4
	ExitInterrupted = 130
)

// ExitCodesHelp is the text of the exit-codes help topic.
const ExitCodesHelp = `Exit codes:

  0    success (a search that matches nothing is a success too); a command
       that only prints ends so, quietly, when its reader goes away
       (dla show … | head -1: stdout closed)
  1    failure: the command could not do its job; or a confirmation was
       answered with anything but "yes" ("not confirmed (type yes)":
       nothing was done); or stdout was closed under recover or migrate,
       which stopped part way
  2    usage: a bad flag, argument or combination of them
  3    partial: the command ran, but some items failed or could not be read
       (for example an archive object that is not valid JSON); they are
       listed on stderr and counted in the summary. dla triage exits 3 too
       when the database given cannot be asked: the groups are printed,
       readiness not checked, and the reason said
  4    AWS credentials or permissions: no credentials, an unknown profile,
       credentials rejected or expired, or access denied
  130  interrupted (Ctrl-C or SIGTERM); work in flight was finished or
       abandoned cleanly

Scripts can branch on these codes; the summary on stderr says what happened.`

// ExitError carries an exit code with an error. A nil Err means the
// command already reported everything and only the code remains.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageErrorf is a usage error (exit 2).
func UsageErrorf(format string, args ...any) error {
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// PartialError is exit 3 with nothing more to say.
var PartialError = &ExitError{Code: ExitPartial}

// ExitCode maps an error to the process's exit code.
func ExitCode(err error) int {
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case IsAuthError(err):
		return ExitAuth
	}
	return ExitFailure
}

// IsAuthError reports whether err is about credentials or permissions.
func IsAuthError(err error) bool { return awsconfig.IsAuthError(err) }
