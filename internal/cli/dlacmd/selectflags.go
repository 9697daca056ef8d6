package dlacmd

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/calendar"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
)

// presentString is a string flag that knows whether it was given, so that
// an empty value means something ("--error-class ”": no error text).
type presentString struct {
	v   string
	set bool
}

func (p *presentString) String() string     { return p.v }
func (p *presentString) Set(v string) error { p.v, p.set = v, true; return nil }
func (p *presentString) Type() string       { return "string" }

// archiveFlag is --archive, shared by every command that reads the archive.
type archiveFlag struct{ value string }

func (a *archiveFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.value, "archive", "", "the archive: s3://BUCKET/STACK or PATH/TO/STACK (default $DLA_ARCHIVE)")
}

func (a *archiveFlag) location(f *Factory) (archive.Location, error) {
	v := a.value
	if v == "" {
		v = f.Getenv("DLA_ARCHIVE")
	}
	loc, err := archive.ParseLocation(v)
	if err != nil {
		return loc, cmdutil.UsageErrorf("%v", err)
	}
	return loc, nil
}

// selectFlags are the selection flags of search, stats (and recover).
type selectFlags struct {
	archiveFlag
	granules, collections, executions, statuses, stateMachines []string
	errorRE                                                    string
	errorClass                                                 presentString
	date, from, to, since                                      string
	// sinceWindow is what --since resolved to, once it has (it then
	// stands in from and to, so that printed commands select the same
	// folders whenever they run).
	sinceWindow                             *cmdutil.SinceWindow
	failed, includeLegacy, ignoreUnreadable bool
	limit, concurrency                      int
}

func (s *selectFlags) register(cmd *cobra.Command) {
	s.archiveFlag.register(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&s.granules, "granule", nil, "granule id, exact (repeatable: any of them)")
	f.StringArrayVar(&s.collections, "collection", nil, "collection as name___version, or a name for every version (repeatable)")
	f.StringArrayVar(&s.executions, "execution", nil, "execution ARN or execution name (repeatable)")
	f.StringSliceVar(&s.statuses, "status", nil, "Step Functions status: RUNNING, SUCCEEDED, FAILED, ABORTED, TIMED_OUT, or none (repeatable, comma-separated)")
	f.StringArrayVar(&s.stateMachines, "state-machine", nil, "state machine ARN or name (repeatable)")
	f.StringVar(&s.errorRE, "error", "", "regular expression matched against the error text (Go RE2 syntax)")
	f.Var(&s.errorClass, "error-class", "the error class, exactly as dla stats --by error and dla triage show it ('': objects without an error text)")
	f.StringVar(&s.date, "date", "", "one date folder: YYYY-MM-DD, today or yesterday (UTC)")
	f.StringVar(&s.from, "from", "", "first date folder, inclusive")
	f.StringVar(&s.to, "to", "", "last date folder, inclusive")
	f.StringVar(&s.since, "since", "", "the last 30m, 6h, 2d or 1w (units s, m, h, d, w): the date folders from the day of now minus it to today, whole (UTC)")
	f.BoolVar(&s.failed, "failed", false, "search failed-sqs/ (where recovery moves what it could not write) instead of sqs/")
	f.BoolVar(&s.includeLegacy, "include-legacy", false, "also read objects outside date folders (pre-v18.3 flat keys); they are dated by their event time")
	f.BoolVar(&s.ignoreUnreadable, "ignore-unreadable", false, "do not exit 3 when some objects cannot be read or decoded (they are still reported)")
	f.IntVar(&s.limit, "limit", 0, "stop after this many matches (0: no limit)")
	f.IntVar(&s.concurrency, "concurrency", 16, "objects fetched and decoded at once")
	_ = cmd.RegisterFlagCompletionFunc("status", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"RUNNING", "SUCCEEDED", "FAILED", "ABORTED", "TIMED_OUT", "none"}, cobra.ShellCompDirectiveNoFileComp
	})
}

var sfnStatuses = map[string]string{
	"running": "RUNNING", "succeeded": "SUCCEEDED", "failed": "FAILED", "aborted": "ABORTED", "timed_out": "TIMED_OUT",
	"completed": "SUCCEEDED", // the Cumulus name
	"none":      "none",
}

// scope validates the flags and builds the selection.
func (s *selectFlags) scope(f *Factory) (selection.Scope, archive.Location, error) {
	loc, err := s.location(f)
	if err != nil {
		return selection.Scope{}, loc, err
	}
	if s.concurrency < 1 || s.concurrency > 1024 {
		return selection.Scope{}, loc, cmdutil.UsageErrorf("--concurrency must be between 1 and 1024, not %d", s.concurrency)
	}
	if s.limit < 0 {
		return selection.Scope{}, loc, cmdutil.UsageErrorf("--limit must not be negative")
	}
	filter := dla.Filter{Granules: s.granules, Collections: s.collections, Executions: s.executions, StateMachines: s.stateMachines}
	for _, st := range s.statuses {
		v, ok := sfnStatuses[strings.ToLower(strings.TrimSpace(st))]
		if !ok {
			return selection.Scope{}, loc, cmdutil.UsageErrorf("invalid --status %q: want RUNNING, SUCCEEDED, FAILED, ABORTED, TIMED_OUT or none", st)
		}
		filter.Statuses = append(filter.Statuses, v)
	}
	if s.errorRE != "" {
		re, err := regexp.Compile(s.errorRE)
		if err != nil {
			return selection.Scope{}, loc, cmdutil.UsageErrorf("invalid --error expression: %v", err)
		}
		filter.Error = re
	}
	if s.errorClass.set {
		class := s.errorClass.v
		filter.ErrorClass = &class
	}
	now := f.Now()
	if err := s.resolveSince(f, now); err != nil {
		return selection.Scope{}, loc, err
	}
	if s.date != "" {
		if s.from != "" || s.to != "" {
			return selection.Scope{}, loc, cmdutil.UsageErrorf("--date cannot be combined with --from or --to")
		}
		d, err := parseDate("--date", s.date, now)
		if err != nil {
			return selection.Scope{}, loc, err
		}
		filter.From, filter.To = d, d
	}
	if s.from != "" {
		if filter.From, err = parseDate("--from", s.from, now); err != nil {
			return selection.Scope{}, loc, err
		}
	}
	if s.to != "" {
		if filter.To, err = parseDate("--to", s.to, now); err != nil {
			return selection.Scope{}, loc, err
		}
	}
	if filter.From != "" && filter.To != "" && filter.From > filter.To {
		return selection.Scope{}, loc, cmdutil.UsageErrorf("--from %s is after --to %s", filter.From, filter.To)
	}
	area := dla.AreaSQS
	if s.failed {
		area = dla.AreaFailed
	}
	return selection.Scope{
		Layout: dla.Layout{Stack: loc.Stack}, Area: area, Filter: filter,
		IncludeLegacy: s.includeLegacy, Limit: s.limit,
	}, loc, nil
}

// resolveSince turns --since into --from and --to: the date folders
// (days, UTC) from the day of now−span to today, which are the folders
// that can hold a message of the span. The folders are read whole: the
// selection does not filter by time within a day. It says so on stderr,
// with the window resolved, once.
func (s *selectFlags) resolveSince(f *Factory, now time.Time) error {
	if s.since == "" || s.sinceWindow != nil {
		return nil
	}
	var given []string
	for _, fl := range [][2]string{{"--date", s.date}, {"--from", s.from}, {"--to", s.to}} {
		if fl[1] != "" {
			given = append(given, fl[0])
		}
	}
	if err := cmdutil.SinceConflict(given...); err != nil {
		return err
	}
	w, err := cmdutil.ResolveSince(s.since, now.Truncate(time.Second)) // only the days matter
	if err != nil {
		return err
	}
	s.sinceWindow = &w
	s.from, s.to = w.Start.Format(dla.DateLayout), w.End.Format(dla.DateLayout)
	folders := fmt.Sprintf("the date folders %s to %s (whole days)", s.from, s.to)
	if s.from == s.to {
		folders = fmt.Sprintf("the date folder %s (the whole day)", s.from)
	}
	fmt.Fprintf(f.IO.ErrOut, "dla: %s: reading %s\n", w, folders)
	return nil
}

// args are the selection flags as given, as words of a command line
// (without --archive); withDates false leaves out --date, --from and --to.
// --since is given as the --from and --to it resolved to.
func (s *selectFlags) args(withDates bool) []string {
	var words []string
	add := func(name string, vals ...string) {
		for _, v := range vals {
			if v != "" {
				words = append(words, "--"+name, v)
			}
		}
	}
	add("granule", s.granules...)
	add("collection", s.collections...)
	add("execution", s.executions...)
	add("status", s.statuses...)
	add("state-machine", s.stateMachines...)
	add("error", s.errorRE)
	if s.errorClass.set {
		words = append(words, "--error-class", s.errorClass.v) // "" too: no error text
	}
	if withDates {
		add("date", s.date)
		add("from", s.from)
		add("to", s.to)
	}
	if s.failed {
		words = append(words, "--failed")
	}
	if s.includeLegacy {
		words = append(words, "--include-legacy")
	}
	return words
}

// open validates the flags and opens the archive they name.
func (s *selectFlags) open(ctx context.Context, f *Factory) (selection.Scope, archive.Location, archive.Store, error) {
	scope, loc, err := s.scope(f)
	if err != nil {
		return scope, loc, nil, err
	}
	store, err := f.OpenArchive(ctx, loc)
	return scope, loc, store, err
}

// parseDate reads YYYY-MM-DD, today or yesterday (UTC).
func parseDate(flag, v string, now time.Time) (string, error) {
	switch strings.ToLower(v) {
	case "today":
		return now.UTC().Format(dla.DateLayout), nil
	case "yesterday":
		return now.UTC().AddDate(0, 0, -1).Format(dla.DateLayout), nil
	}
	if !dla.IsDate(v) {
		if err := calendar.NotADay(v); err != nil && len(v) == len(dla.DateLayout) {
			return "", cmdutil.UsageErrorf("invalid %s: %v", flag, err)
		}
		return "", cmdutil.UsageErrorf("invalid %s %q: want YYYY-MM-DD, today or yesterday", flag, v)
	}
	return v, nil
}

// scan runs a selection, hands each decoded match to onMatch, and reports
// unreadable objects on stderr through ul (stopping at once on an AWS
// credentials or permission error, which every other object would hit too).
func scan(ctx context.Context, store archive.Store, scope selection.Scope, concurrency int,
	ul *unreadableLog, onMatch func(*dla.Decoded) error) (selection.Stats, error) {
	return selection.Run(ctx, store, scope, concurrency, func(r selection.Result) error {
		if !r.Unreadable() {
			return onMatch(r.Decoded)
		}
		if err := stopOnAuth(r); err != nil {
			return err
		}
		ul.report(r)
		return nil
	})
}

// unreadableShown is how many unreadable objects --ignore-unreadable lists
// (-v lists every one).
const unreadableShown = 5

// unreadableLog reports the unreadable objects of a scan on stderr: every
// one, or with --ignore-unreadable the first few and then how many more
// there were, so that a known-bad archive does not bury the results.
type unreadableLog struct {
	f        *Factory
	progress *cmdutil.Progress
	limit    int // -1: no limit
	n        int
}

func newUnreadableLog(f *Factory, progress *cmdutil.Progress, ignoreUnreadable, verbose bool) *unreadableLog {
	ul := &unreadableLog{f: f, progress: progress, limit: -1}
	if ignoreUnreadable && !verbose {
		ul.limit = unreadableShown
	}
	return ul
}

func (ul *unreadableLog) report(r selection.Result) {
	ul.n++
	if ul.limit < 0 || ul.n <= ul.limit {
		reportUnreadable(ul.f, ul.progress, r)
	}
}

// done says how many unreadable objects were not listed.
func (ul *unreadableLog) done() {
	if hidden := ul.n - ul.limit; ul.limit >= 0 && hidden > 0 {
		ul.progress.Clear()
		fmt.Fprintf(ul.f.IO.ErrOut, "dla: %s not listed (-v lists every one)\n", output.Plural(hidden, "more unreadable object"))
	}
}

// reportUnreadable names an object that could not be read and why, on
// stderr (the key and reason escaped: they come from the archive).
func reportUnreadable(f *Factory, progress *cmdutil.Progress, r selection.Result) {
	progress.Clear()
	fmt.Fprintf(f.IO.ErrOut, "dla: unreadable %s: %s\n", output.Escape(textKey(r.Entry.Key)), output.Escape(cmdutil.ErrorLine(r.Err)))
}

// finish turns the run's outcome into the command's error: the run error
// itself (auth errors give exit 4), or exit 3 when objects were unreadable.
func finish(runErr error, st selection.Stats, ignoreUnreadable bool) error {
	if runErr != nil {
		return runErr
	}
	if st.Unreadable > 0 && !ignoreUnreadable {
		return cmdutil.PartialError
	}
	return nil
}

// stopOnAuth aborts the run when an object could not be fetched for lack of
// credentials or permission: every other object would fail the same way.
func stopOnAuth(r selection.Result) error {
	// An object that was read but is not JSON is never about credentials
	// (and its reason is not worked out unless it is shown).
	if r.Err != nil && !dla.IsDecodeError(r.Err) && cmdutil.IsAuthError(r.Err) {
		return fmt.Errorf("reading %s: %w", r.Entry.Key, r.Err)
	}
	return nil
}
