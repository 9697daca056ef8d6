package cmdutil

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/awsconfig"
)

// AddAWSFlags registers --profile, --region, --endpoint-url and --debug-aws
// as persistent flags. Unset flags leave the SDK's own precedence
// (AWS_* environment, then shared config) in force.
func AddAWSFlags(cmd *cobra.Command, s *awsconfig.Settings) {
	f := cmd.PersistentFlags()
	f.StringVar(&s.Profile, "profile", "", "AWS shared-config profile (beats AWS_PROFILE)")
	f.StringVar(&s.Region, "region", "", "AWS region (beats AWS_REGION and the profile)")
	f.StringVar(&s.EndpointURL, "endpoint-url", "", "send AWS requests to this URL, e.g. a local S3 (beats AWS_ENDPOINT_URL)")
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
	return &ExitError{Code: ExitUsage, Err: fmt.Errorf("%w\nRun '%s --help' for usage.", err, cmd.CommandPath())}
}
