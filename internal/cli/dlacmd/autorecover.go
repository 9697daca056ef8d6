package dlacmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/triage"
	"github.com/deadletter/deadletter/internal/workflow/autorecover"
)

// AutorecoverOptions are dla autorecover's flags.
type AutorecoverOptions struct {
	Factory *Factory
	Archive archiveFlag
	Engine  engineFlags
	Mode    string
	DryRun  bool
	Yes     bool
	Offline bool

	Lookback, Probe, MaxObjects, MaxAttempts, Concurrency int
	Deadline                                              time.Duration

	DatabaseURL, DBSecret string
	Topics                snspub.Topics
	NotifyTopic           string

	Audit  cmdutil.AuditFlags
	Output *cmdutil.Output
}

// NewCmdAutorecover builds `dla autorecover`.
func NewCmdAutorecover(f *Factory) *cobra.Command {
	opts := &AutorecoverOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "autorecover",
		Short: "One pass of triage, probe and recover over the last days: what the dla-autorecover Lambda does",
		Long: `One pass over the sqs/ date folders of the last --lookback days: triage them
(with the database's readiness), choose the groups to try (transient ones,
and fix-first ones whose records exist now; never permanent, unknown or
unreadable ones), probe each with recover's rolled-back dry run of a few of
its objects, and, in --mode recover, recover each group whose probe writes,
as dla recover would, within --max-objects and the deadline.

A group whose probe finds the database still failing waits before it is
probed again: 15 minutes, then doubling to 4 hours. The backoff, the last
notification and how often each object was tried come from the audit
records of earlier passes, so a pass by hand and the Lambda see the same.

--engine athena counts the lookback with one query over the stack's Glue
table instead of reading every object (a lookback too large to read in
one pass), and recover then finds the keys of the groups it recovers with
a second query.

--mode report (the default) triages, probes and notifies and changes
nothing (it writes its own audit record: the next pass's backoff). Run it
first, and deploy the Lambda in report mode for a day (docs/autorecover.md).
--dry-run stops after the probe and records nothing.`,
		Example: `  dla autorecover --archive s3://my-bucket/my-stack
  dla autorecover --archive s3://my-bucket/my-stack --mode recover --yes --reason INC-1234
  dla autorecover --archive s3://my-bucket/my-stack --dry-run -o json
  dla autorecover --archive s3://my-bucket/my-stack --engine athena --max-scan-bytes 50GB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAutorecover(cmd, args, opts)
		},
	}
	opts.Archive.register(cmd)
	opts.Engine.registerEngine(cmd, "who counts the lookback: local (dla reads every object) or athena (one query over the stack's Glue table; recover then reads only what it recovers)")
	fl := cmd.Flags()
	fl.StringVar(&opts.Mode, "mode", autorecover.ModeReport, "report (triage, probe, notify; change nothing) or recover")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "stop after the probe: no recover, no record, no notification")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "recover without asking (needed when stdin is not a terminal)")
	fl.IntVar(&opts.Lookback, "lookback", autorecover.DefaultLookback, "days of sqs/ date folders, today included")
	fl.IntVar(&opts.Probe, "probe", autorecover.DefaultProbe, "objects of each group that recover's dry run tries")
	fl.IntVar(&opts.MaxObjects, "max-objects", autorecover.DefaultMaxObjects, "objects recovered in one pass at most")
	fl.IntVar(&opts.MaxAttempts, "max-attempts", autorecover.DefaultMaxAttempts, "recorded runs that tried an object before it is left for a person (0: no limit)")
	fl.IntVar(&opts.Concurrency, "concurrency", 8, "objects written at once")
	fl.DurationVar(&opts.Deadline, "deadline", 0, "take no new object once less than 90s of this is left (0: none)")
	fl.BoolVar(&opts.Offline, "offline", false, "no Step Functions or S3 reads (as dla recover --offline)")
	fl.StringVar(&opts.DatabaseURL, "database-url", "", "PostgreSQL connection string (default $DATABASE_URL)")
	fl.StringVar(&opts.DBSecret, "db-secret", "", "Secrets Manager secret (ARN or name) with the database login")
	fl.StringVar(&opts.Topics.Execution, "execution-sns-topic-arn", "", "publish execution notifications to this SNS topic, as recover does (default $execution_sns_topic_arn)")
	fl.StringVar(&opts.Topics.Granule, "granule-sns-topic-arn", "", "publish granule notifications to this SNS topic (default $granule_sns_topic_arn)")
	fl.StringVar(&opts.Topics.Pdr, "pdr-sns-topic-arn", "", "publish PDR notifications to this SNS topic (default $pdr_sns_topic_arn)")
	fl.StringVar(&opts.NotifyTopic, "notify-topic-arn", "", "send the pass's report to this SNS topic when something changed (default $AUTORECOVER_TOPIC_ARN)")
	cmdutil.AddAuditFlags(cmd, &opts.Audit, false)
	opts.Output = cmdutil.AddOutputFlag(cmd, "text", "json")
	return cmd
}

func runAutorecover(cmd *cobra.Command, args []string, opts *AutorecoverOptions) error {
	ctx, f := cmd.Context(), opts.Factory
	if opts.Mode != autorecover.ModeReport && opts.Mode != autorecover.ModeRecover {
		return cmdutil.UsageErrorf("--mode %q: want report or recover", opts.Mode)
	}
	if opts.DatabaseURL != "" && opts.DBSecret != "" {
		return cmdutil.UsageErrorf("--database-url and --db-secret cannot be combined")
	}
	for name, v := range map[string]int{"--lookback": opts.Lookback, "--probe": opts.Probe, "--max-objects": opts.MaxObjects, "--concurrency": opts.Concurrency} {
		if v < 1 {
			return cmdutil.UsageErrorf("%s must be at least 1", name)
		}
	}
	if opts.MaxAttempts < 0 {
		return cmdutil.UsageErrorf("--max-attempts must not be negative")
	}
	useAthena, err := opts.Engine.athena()
	if err != nil {
		return err
	}
	recovers := opts.Mode == autorecover.ModeRecover && !opts.DryRun
	if recovers {
		if err := cmdutil.RequireYes(f.IO, opts.Yes, "dla autorecover --mode recover"); err != nil {
			return err
		}
	}
	loc, err := opts.Archive.location(f)
	if err != nil {
		return err
	}
	var engine *autorecover.Athena
	plan := athenaPlan{loc: loc}
	if useAthena {
		if loc.Bucket == "" {
			return cmdutil.UsageErrorf("--engine athena needs an archive in S3 (--archive s3://BUCKET/STACK)")
		}
		if err := opts.Engine.settings(&plan); err != nil {
			return err
		}
	}
	store, err := f.OpenArchive(ctx, loc)
	if err != nil {
		return err
	}
	topics := opts.Topics
	if topics.None() {
		topics = snspub.TopicsFromEnv(f.Getenv)
	}
	dburl := opts.DatabaseURL
	if dburl == "" && opts.DBSecret == "" {
		dburl = f.Getenv("DATABASE_URL")
	}
	layout := dla.Layout{Stack: loc.Stack}
	usesAWS := loc.Bucket != "" || !opts.Offline || opts.DBSecret != "" || !topics.None()
	started := cmdutil.AuditStarted(cmd, args, opts.Audit, f.Getenv)
	started.Actor = audit.WhoAmI(ctx, f.callerIdentity(usesAWS), f.Getenv)
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	if useAthena {
		r, err := f.athenaRunner(ctx, plan, progress)
		if err != nil {
			return err
		}
		engine = &autorecover.Athena{Runner: r, Names: plan.names}
	}
	c := autorecover.Config{Store: store, Location: loc, Layout: layout, Mode: opts.Mode, DryRun: opts.DryRun,
		Lookback: opts.Lookback, Probe: opts.Probe, MaxObjects: opts.MaxObjects, MaxAttempts: opts.MaxAttempts,
		Concurrency: opts.Concurrency, DatabaseURL: dburl, DBSecret: opts.DBSecret,
		AWS:      func() (aws.Config, error) { return awsconfig.Load(ctx, *f.AWS) },
		Settings: *f.AWS, Offline: opts.Offline, Topics: topics, Athena: engine,
		Started: started, Database: auditDatabase(dburl), NoAudit: opts.Audit.NoAudit,
		Command: func(g *triage.Group) []string {
			return triageCommand{f: f, sel: &selectFlags{}, archive: opts.Archive.value}.selecting("recover", g)
		},
		Now: f.Now, Explain: cmdutil.ErrorLine,
		Warnf: func(format string, a ...any) {
			progress.Clear()
			fmt.Fprintf(f.IO.ErrOut, "dla: %s\n", output.Escape(fmt.Sprintf(format, a...)))
		},
		Stage: func(stage string) { progress.Update("autorecover: %s", stage) },
	}
	if opts.Deadline > 0 {
		c.Deadline = f.Now().Add(opts.Deadline)
	}
	if topic := cmpOr(opts.NotifyTopic, f.Getenv("AUTORECOVER_TOPIC_ARN")); topic != "" {
		c.Topic = topic
		c.Notify = snsNotifier(f, topic)
	}
	if recovers && !opts.Yes {
		c.Confirm = func(r *autorecover.Report) (bool, error) {
			progress.Clear()
			writeAutorecoverPlan(f.IO.ErrOut, r, f.IO.ErrTerminalWidth())
			return cmdutil.Confirm(f.IO, "recover the groups marked try whose probe writes? type yes: ", "yes")
		}
	}
	rep, err := autorecover.Pass(ctx, c)
	progress.Clear()
	if rep == nil {
		if errors.Is(err, autorecover.ErrLocked) {
			return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: err}
		}
		return err
	}
	if errors.Is(err, autorecover.ErrNotConfirmed) {
		return cmdutil.ErrNotConfirmed
	}
	if opts.Output.Value == "json" {
		if werr := output.WriteJSON(output.JSONOut(f.IO), rep); werr != nil {
			return werr
		}
	} else {
		writeAutorecoverReport(f.IO.Out, rep, f.IO.TerminalWidth())
	}
	return err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// writeAutorecoverPlan is the groups and what the pass does with each, for
// the question; on a terminal (width > 0) each line folds to its width.
func writeAutorecoverPlan(w io.Writer, r *autorecover.Report, width int) {
	line := func(text, first, rest string) {
		text = output.Escape(text)
		if width <= 0 {
			fmt.Fprintln(w, first+text)
			return
		}
		fmt.Fprintln(w, output.Fold(output.Fields(text, width-len(first)), width, first, rest))
	}
	line(fmt.Sprintf("autorecover (%s mode) of %s, %s..%s: %s in %s, %s", r.Mode, r.Archive,
		r.From, r.To, output.Plural(r.Objects, "object"), output.Plural(len(r.Groups), "group"), r.CountedBy()), "", "  ")
	if r.Readiness != "" {
		line("database not reached (readiness not checked, probes wait): "+r.Readiness, "  ", "    ")
	}
	for _, g := range r.Groups {
		head := fmt.Sprintf("  %-6s %6d  %-9s ", g.Decision, g.Count, g.Class)
		line(groupLabel(g), head, strings.Repeat(" ", len(head)))
		line(groupNote(g, r.Readiness), "         ", "         ")
	}
}

// writeAutorecoverReport is the pass's report in words (stdout).
func writeAutorecoverReport(w io.Writer, r *autorecover.Report, width int) {
	writeAutorecoverPlan(w, r, width)
	t := r.Totals
	fmt.Fprintf(w, "recovered: %d written, %d dropped, %d moved to failed-sqs/, %d left in sqs/", t.Written, t.Dropped, t.Failed, t.Left)
	if t.OverAttempts > 0 {
		fmt.Fprintf(w, "; %d tried too often, left for a person", t.OverAttempts)
	}
	fmt.Fprintln(w)
	if r.Stopped != "" {
		fmt.Fprintf(w, "stopped early (%s): the next pass goes on\n", r.Stopped)
	}
	if r.Audit != "" {
		fmt.Fprintf(w, "record: %s\n", output.Escape(r.Audit))
	}
	n := r.Notification
	switch {
	case n.Sent:
		fmt.Fprintf(w, "notified %s (message %s)\n", output.Escape(n.Topic), output.Escape(n.MessageID))
	case n.Topic != "":
		fmt.Fprintf(w, "not notified: %s\n", output.Escape(n.Why))
	}
}

func groupLabel(g autorecover.GroupReport) string {
	switch {
	case g.ErrorClass == nil:
		return "(unreadable objects)"
	case *g.ErrorClass == "":
		return "(no error text)"
	}
	return *g.ErrorClass
}

// groupNote is what became of a group: its probe, its recover, or why it
// was not tried. unreached is why the database was not reached, said once
// above the groups, and not again in each.
func groupNote(g autorecover.GroupReport, unreached string) string {
	var parts []string
	if p := g.Probe; p != nil {
		switch {
		case p.Outcome == autorecover.ProbeWrites:
			parts = append(parts, fmt.Sprintf("probe: %d of %d would be written", p.Writes, p.Tried))
		case p.Outcome == autorecover.ProbeEnvironment && p.Error == unreached:
			parts = append(parts, "probe: the database is not reached")
		case p.Outcome == autorecover.ProbeEnvironment:
			parts = append(parts, "probe: the database still fails ("+p.Error+")")
		default:
			parts = append(parts, fmt.Sprintf("probe: none of %d would be written: a person looks", p.Tried))
		}
	} else {
		parts = append(parts, strings.ReplaceAll(g.Why, " (readiness not checked: "+unreached+")", ""))
	}
	if g.WaitUntil != nil && g.Decision != autorecover.Waits { // a waiting group's why says until when
		parts = append(parts, "waits until "+g.WaitUntil.UTC().Format(time.RFC3339))
	}
	if c := g.Recovered; c != nil {
		parts = append(parts, fmt.Sprintf("recovered %d: %d written, %d dropped, %d failed, %d left", c.Selected, c.Written, c.Dropped, c.Failed, c.Left))
	}
	return strings.Join(parts, "; ")
}

// snsNotifier publishes the pass's notification to topic with this
// invocation's AWS settings.
func snsNotifier(f *Factory, topic string) func(context.Context, autorecover.Notification) (string, error) {
	return autorecover.SNSNotifier(func(ctx context.Context) (autorecover.Publisher, error) {
		cfg, err := awsconfig.Load(ctx, *f.AWS)
		if err != nil {
			return nil, err
		}
		return awsconfig.SNS(cfg, *f.AWS), nil
	}, topic)
}
