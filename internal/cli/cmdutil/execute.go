package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/buildinfo"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusapi"
	"github.com/deadletter/deadletter/internal/cumulusdb"
)

// CPUProfileEnv names the file that, when set, receives a CPU profile of
// the command (runtime/pprof): how the benchmarks find where the time goes.
const CPUProfileEnv = "DEADLETTER_CPUPROFILE"

// AllocsProfileEnv names the file that, when set, receives the command's
// allocations profile at its end (runtime/pprof "allocs": what it
// allocated, by where, whatever the collector freed since).
const AllocsProfileEnv = "DEADLETTER_ALLOCSPROFILE"

// Execute runs a command tree on one command line, reports its error on
// errOut prefixed with the program name, and returns the exit code. Both
// binaries end here, so they agree on exit codes and error reporting.
func Execute(ctx context.Context, root *cobra.Command, args []string, errOut io.Writer) int {
	root.SetArgs(args)
	if path := os.Getenv(CPUProfileEnv); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() {
				pprof.StopCPUProfile()
				f.Close()
			}()
		}
	}
	if path := os.Getenv(AllocsProfileEnv); path != "" {
		defer func() {
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	err := root.ExecuteContext(ctx)
	if werr := awsconfig.WriteCallCounts(); werr != nil {
		fmt.Fprintf(errOut, "%s: %s: %v\n", root.Name(), awsconfig.CallCountsEnv, werr)
	}
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		err = &ExitError{Code: ExitUsage, Err: err}
	}
	code := ExitCode(err)
	if ctx.Err() != nil && code != ExitOK {
		code = ExitInterrupted
	}
	var ee *ExitError
	if errors.Is(err, syscall.EPIPE) && !errors.As(err, &ee) {
		// The reader of stdout went away (`dla show … | head -1`) from a
		// command that only prints: what is lost is output nobody reads.
		// A quiet success, whether the write that found the pipe closed
		// came before the end or (the output fitting the pipe) none did:
		// the same exit every time. A command that changes things returns
		// a MutationError instead, and exits 1.
		return ExitOK
	}
	switch {
	case err == nil:
	case code == ExitInterrupted:
		fmt.Fprintf(errOut, "%s: interrupted\n", root.Name())
	case errors.As(err, &ee) && ee.Err == nil:
	default:
		// Errors may quote keys and texts from the archive or a queue:
		// stderr is for people, so control characters are always escaped.
		fmt.Fprintf(errOut, "%s: %s\n", root.Name(), output.Escape(ErrorLine(err)))
	}
	return code
}

// ErrorLine is how an error is shown to an operator: a database failure
// naming PostgreSQL, a common AWS failure
// (missing bucket, access denied, no or expired credentials, unknown
// profile, unreachable endpoint) as one line that says what to check,
// anything else as it is.
func ErrorLine(err error) string {
	// PostgreSQL first: its connection errors are network errors too, and
	// the AWS explainer would send the operator to --endpoint-url.
	if line, ok := cumulusdb.Explain(err); ok {
		return line
	}
	// The Cumulus API's network errors name it, not the AWS endpoint.
	var api *cumulusapi.UnreachableError
	if errors.As(err, &api) {
		return err.Error()
	}
	if e, ok := awsconfig.Explain(err); ok {
		return e.Message
	}
	if errors.Is(err, syscall.EPIPE) {
		return "stdout was closed before the output ended (the reader of the pipe exited); output stopped"
	}
	return err.Error()
}

// MutationError is the error of a command that changes things (recover,
// migrate): a closed stdout stopped it part way, so a write that failed
// with EPIPE is exit 1 with its line, never Execute's quiet success of a
// command that only prints.
func MutationError(err error) error {
	var ee *ExitError
	if errors.Is(err, syscall.EPIPE) && !errors.As(err, &ee) {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	return err
}

// UsageArgs turns a cobra positional-argument check into a usage error.
func UsageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return FlagErrorFunc(cmd, err)
		}
		return nil
	}
}

// HelpTopic is a help-only command (`X help exit-codes`).
func HelpTopic(name, short, long string) *cobra.Command {
	return &cobra.Command{Use: name, Short: short, Long: long}
}

// NewCmdVersion is the version command of a binary.
func NewCmdVersion(program string, out io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(out, buildinfo.String(program))
			return err
		},
	}
}

// SetupRoot applies what every root command shares: silenced cobra errors
// (Execute reports them), the version template, output streams, usage
// errors for bad flags, and the AWS flags.
func SetupRoot(root *cobra.Command, out, errOut io.Writer) {
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.Version = buildinfo.String(root.Name())
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(FlagErrorFunc)
}
