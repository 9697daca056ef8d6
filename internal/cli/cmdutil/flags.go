package cmdutil

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deadletter/deadletter/internal/awsconfig"
)

// AddAWSFlags registers --profile, --region, --endpoint-url and --debug-aws
// as persistent flags. Unset flags leave the SDK's own precedence
// (AWS_* environment, then shared config) in force.
func AddAWSFlags(cmd *cobra.Command, s *awsconfig.Settings) {
	f := cmd.PersistentFlags()
	f.StringVar(&s.Profile, "profile", "", "AWS shared-config profile (beats AWS_PROFILE)")
	f.StringVar(&s.Region, "region", "", "AWS region (beats AWS_REGION and the profile)")
	f.StringVar(&s.EndpointURL, "endpoint-url", "", "send every AWS request to this URL (S3, and Step Functions, SNS, Secrets Manager or Athena where the verb calls them), e.g. a local S3 (beats AWS_ENDPOINT_URL_<SERVICE> and AWS_ENDPOINT_URL)")
	f.BoolVar(&s.Debug, "debug-aws", false, "log AWS requests and responses on stderr, with signatures and tokens redacted (also DEADLETTER_DEBUG=1)")
}

// Output is an -o/--output flag restricted to a set of formats.
type Output struct {
	Value   string
	allowed []string
}

// AddOutputFlag registers -o/--output with the allowed formats; the first
// is the default.
func AddOutputFlag(cmd *cobra.Command, allowed ...string) *Output {
	o := &Output{Value: allowed[0], allowed: allowed}
	cmd.Flags().StringVarP(&o.Value, "output", "o", allowed[0], "output format: "+strings.Join(allowed, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return allowed, cobra.ShellCompDirectiveNoFileComp
	})
	return o
}

// Validate checks the chosen format.
func (o *Output) Validate() error {
	if !slices.Contains(o.allowed, o.Value) {
		return UsageErrorf("invalid --output %q: want one of %s", o.Value, strings.Join(o.allowed, ", "))
	}
	return nil
}

// FlagErrorFunc makes cobra's flag errors usage errors (exit 2).
func FlagErrorFunc(cmd *cobra.Command, err error) error {
	err = flagValueError(err)
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w\nRun '%s --help' for usage.", err, cmd.CommandPath())}
}

// flagValueError says in the tool's words what is wrong with a flag's value
// that did not parse as its type: `--rate: "abc" is not a number (send at
// most …)`, where pflag said `invalid argument "abc" for "--rate" flag:
// strconv.ParseFloat: parsing "abc": invalid syntax`. Other errors are
// returned as they are.
func flagValueError(err error) error {
	var iv *pflag.InvalidValueError
	if !errors.As(err, &iv) || iv.GetFlag() == nil {
		return err
	}
	fl, value := iv.GetFlag(), iv.GetValue()
	var what string
	switch t := fl.Value.Type(); {
	case t == "duration":
		what = "a duration (like 30s, 5m or 1h30m)"
	case t == "bool":
		what = "true or false"
	case strings.HasPrefix(t, "float"):
		what = "a number"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		what = "a whole number"
	default:
		return err
	}
	msg := fmt.Sprintf("--%s: %q is not %s", fl.Name, value, what)
	if errors.Is(err, strconv.ErrRange) {
		msg = fmt.Sprintf("--%s: %s is out of range", fl.Name, value)
	}
	if fl.Usage != "" {
		msg += " (" + fl.Usage + ")"
	}
	return errors.New(msg)
}
