package cmdutil

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// Issue 38 item 9: `--rate abc` printed `invalid argument "abc" for
// "--rate" flag: strconv.ParseFloat: parsing "abc": invalid syntax`. A
// flag value that does not parse is now said in the tool's words: the
// flag, the value, what it must be, and the flag's own help; a usage
// error (exit 2).
func TestFlagValueErrorsAreSaidInTheToolsWords(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "abc"}, `--rate: "abc" is not a number (messages a second)`},
		{[]string{"--count", "x"}, `--count: "x" is not a whole number (how many)`},
		{[]string{"--count", "99999999999999999999"}, `--count: 99999999999999999999 is out of range (how many)`},
		{[]string{"--wait", "3q"}, `--wait: "3q" is not a duration (like 30s, 5m or 1h30m) (how long)`},
		{[]string{"--yes=maybe"}, `--yes: "maybe" is not true or false (no prompt)`},
	} {
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
		var (
			rate  float64
			count int
			wait  time.Duration
			yes   bool
		)
		cmd.Flags().Float64Var(&rate, "rate", 0, "messages a second")
		cmd.Flags().IntVar(&count, "count", 0, "how many")
		cmd.Flags().DurationVar(&wait, "wait", 0, "how long")
		cmd.Flags().BoolVar(&yes, "yes", false, "no prompt")
		cmd.SetFlagErrorFunc(FlagErrorFunc)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != ExitUsage {
			t.Errorf("%v: %v, want a usage error", c.args, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, c.want+"\n") || strings.Contains(msg, "strconv") || strings.Contains(msg, "invalid argument") {
			t.Errorf("%v: %q, want %q", c.args, msg, c.want)
		}
	}
}
