package pushdlqcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/lambdactl"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// EnvAudit is where pushdlq keeps its audit records when --audit is not
// given: s3://BUCKET/PREFIX.
const EnvAudit = "DEADLETTER_AUDIT"

// auditPlace is where pushdlq's audit records are: --audit
// s3://BUCKET/PREFIX, else $DEADLETTER_AUDIT, else the local state
// directory (not shared with other operators).
type auditPlace struct {
	// store is nil for a local directory that does not exist yet (no run
	// was recorded there): nothing to read; open creates it.
	store archive.Store
	base  string
	// dir is the local directory (empty for S3).
	dir string
}

// where names the records' location for people.
func (p *auditPlace) where() string {
	if p.dir != "" {
		return p.dir
	}
	return audit.Where(p.store, p.base)
}

// planLine is the plan's line on where the record goes.
func (p *auditPlace) planLine() string {
	if p.dir != "" {
		return "audit: " + p.dir + " (local: not shared with other operators; --audit s3://… shares it)"
	}
	return "audit: " + p.where()
}

// auditPlace resolves where the records are; flag is --audit's value.
// Nothing is created or read.
func (f *Factory) auditPlace(ctx context.Context, flag string) (*auditPlace, error) {
	loc := flag
	what := "--audit"
	if loc == "" {
		loc, what = f.Getenv(EnvAudit), EnvAudit
	}
	if loc == "" {
		state, err := f.StateDir()
		if err != nil {
			return nil, fmt.Errorf("the local audit directory: %w", err)
		}
		p := &auditPlace{dir: filepath.Join(state, "audit")}
		if st, err := os.Stat(p.dir); err == nil && st.IsDir() {
			if p.store, err = archive.NewLocal(p.dir); err != nil {
				return nil, err
			}
		}
		return p, nil
	}
	rest, ok := strings.CutPrefix(loc, "s3://")
	bucket, prefix, _ := strings.Cut(rest, "/")
	if !ok || bucket == "" {
		return nil, cmdutil.UsageErrorf("%s %q: want s3://BUCKET/PREFIX", what, loc)
	}
	prefix = strings.Trim(prefix, "/")
	cfg, err := awsconfig.Load(ctx, *f.AWS)
	if err != nil {
		return nil, err
	}
	// --endpoint-url is SQS's: S3 follows AWS_ENDPOINT_URL_S3,
	// AWS_ENDPOINT_URL and the profile, and a local SQS with S3 left to
	// AWS is refused before any request.
	if err := awsconfig.RequireOwnEndpoint(cfg, *f.AWS, "the audit record ("+what+")", awsconfig.ServiceSQS, awsconfig.ServiceS3); err != nil {
		return nil, cmdutil.UsageErrorf("%w", err)
	}
	s := *f.AWS
	s.EndpointURL = ""
	p := &auditPlace{store: archive.NewS3(awsconfig.S3(cfg, s), bucket)}
	if prefix != "" {
		p.base = prefix + "/"
	}
	return p, nil
}

// open is the store a record is written to, a local directory created.
func (p *auditPlace) open() (archive.Store, error) {
	if p.store != nil {
		return p.store, nil
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return nil, &audit.UnwritableError{Where: p.dir, Err: err}
	}
	st, err := archive.NewLocal(p.dir)
	if err != nil {
		return nil, &audit.UnwritableError{Where: p.dir, Err: err}
	}
	p.store = st
	return st, nil
}

// replays reads the recorded replay runs (their items) and gives, by
// notification id, the runs that replayed it. Records that cannot be read
// are named on w.
func (p *auditPlace) replays(ctx context.Context, w io.Writer) (map[string][]audit.Replay, error) {
	if p.store == nil {
		return map[string][]audit.Replay{}, nil
	}
	runs, problems, err := audit.List(ctx, p.store, p.base, audit.Filter{Tool: "pushdlq", Verbs: []string{"replay"}})
	if err != nil {
		return nil, err
	}
	for _, pr := range problems {
		fmt.Fprintf(w, "warning: audit: %s\n", output.Escape(pr))
	}
	for i := range runs {
		if err := runs[i].LoadItems(ctx, p.store); err != nil {
			return nil, err
		}
		if runs[i].Problem != "" {
			fmt.Fprintf(w, "warning: audit: %s%s\n", runs[i].Folder, output.Escape(runs[i].Problem))
		}
	}
	return audit.Replays(runs), nil
}

// beginAudit writes the started record (actor asked now): its error is
// the run's refusal, nothing moved.
func (f *Factory) beginAudit(ctx context.Context, p *auditPlace, s audit.Started) (*audit.Recorder, error) {
	st, err := p.open()
	if err != nil {
		return nil, err
	}
	w := f.IO.ErrOut
	env := cmdutil.AuditEnv{Now: f.Now, Getenv: f.Getenv, Warnf: func(format string, args ...any) { fmt.Fprintf(w, "warning: "+format+"\n", args...) }}
	return env.Begin(ctx, st, p.base, s, cmdutil.AWSIdentity(f.AWS))
}

// finishAudit writes the finished record with a context that outlives an
// interrupt; what could not be recorded is a warning.
func finishAudit(ctx context.Context, w io.Writer, rec *audit.Recorder, counts map[string]int, err error) {
	if rec == nil {
		return
	}
	f := audit.Finished{Counts: counts, Interrupted: errors.Is(err, context.Canceled)}
	if err != nil && !errors.Is(err, context.Canceled) {
		f.Error = cmdutil.ErrorLine(err)
	}
	if ferr := cmdutil.FinishAudit(ctx, rec, f, err); ferr != nil {
		fmt.Fprintf(w, "warning: %s\n", output.Escape(ferr.Error()))
	}
}

// readGuard resolves where the audit records are and counts, for the
// replay guard, the recorded replays of each notification. Records that
// cannot be read refuse the run (nothing read from the DLQ) unless
// --max-replays 0.
func (o *ReplayOptions) readGuard(ctx context.Context) error {
	w := o.Factory.IO.ErrOut
	place, err := o.Factory.auditPlace(ctx, o.Audit.Location)
	if err != nil {
		if o.MaxReplays == 0 && o.Audit.NoAudit {
			return nil // neither the guard nor a record needs it
		}
		return err
	}
	o.audit = place
	replays, err := place.replays(ctx, w)
	if err != nil {
		if o.MaxReplays != 0 {
			return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf(
				"the replay guard cannot read the audit records at %s: %s; nothing was read from the DLQ (--max-replays 0 replays without the guard)",
				place.where(), auditErrorLine(err))}
		}
		fmt.Fprintf(w, "warning: the audit records at %s cannot be read (%s); --max-replays 0: no guard\n", place.where(), auditErrorLine(err))
		return nil
	}
	o.Replayed = audit.ReplayCounts(replays)
	return nil
}

// auditStarted is the replay's started record (the actor is asked when it
// is begun): plan is nil for a streamed run, whose plan is made after its
// first sends.
func (o *ReplayOptions) auditStarted(plan *pushreplay.Plan) audit.Started {
	s := o.started
	s.Target = audit.Target{DLQ: o.Queue.DLQ}
	start, end := o.Policy.Window()
	s.Selection = map[string]any{"window": start.Format(time.RFC3339Nano) + "/" + end.Format(time.RFC3339Nano),
		"codes": o.Policy.CodesString(), "ineligible": o.Ineligible, "max_replays": o.MaxReplays}
	if o.FromFile != "" {
		s.Selection["from_file"] = o.FromFile
	}
	if o.Resume != "" {
		s.Selection["resume"] = o.Resume
	}
	if o.Max > 0 {
		s.Selection["max"] = o.Max
	}
	if plan == nil {
		// Sent during the scan: no plan before the first move, and the
		// queues are the base's.
		s.Selection["streamed"] = true
		s.Target.Queues = []string{o.BaseURL + "P<priority>"}
		return s
	}
	if plan.Source != "" && o.FromFile == "" {
		s.Target.DLQ = plan.Source
	}
	seen := map[string]bool{}
	for k := range plan.ByTarget {
		if !seen[k.Target] {
			seen[k.Target] = true
			s.Target.Queues = append(s.Target.Queues, k.Target)
		}
	}
	sort.Strings(s.Target.Queues)
	held := plan.Ineligible[pushpolicy.ReasonHeldBack]
	s.Plan = map[string]int{"scanned": plan.Scanned, "eligible": plan.Eligible, "ineligible": plan.IneligibleTotal() - held,
		"held_back": held, "already_sent": plan.AlreadySent}
	return s
}

// replayItem is a message's audit item: replayed, parked, released,
// held_back (Result: released or parked), already_sent, or the outcome
// of a move that did not happen (failed, uncertain, hold_lost,
// abandoned).
func replayItem(m pushreplay.Fate, replayed map[string]int) audit.Item {
	it := audit.Item{MessageID: m.MessageID, NotificationID: m.NotificationID, Action: string(m.Outcome), Queue: m.Target,
		ReplaysBefore: replayed[m.NotificationID]}
	switch m.Outcome {
	case sqsmove.OutcomeSent:
		it.Action = audit.ActionReplayed
	case sqsmove.OutcomeSkippedDuplicate:
		it.Action = "already_sent" // sent by the resumed run: deleted from the DLQ
	}
	if m.Reason == pushpolicy.ReasonHeldBack {
		it.Action, it.Result = "held_back", string(m.Outcome)
	} else if m.Outcome == pushreplay.OutcomeReleased {
		it.Result = string(m.Reason)
	}
	if m.Err != nil {
		it.Error = audit.RedactText(m.Err.Error())
	}
	if m.DeleteFailed != nil {
		it.Error = "sent, but not deleted from the DLQ: " + audit.RedactText(m.DeleteFailed.Error())
	}
	return it
}

// replayCounts are a replay's counts for its finished record.
func replayCounts(s pushreplay.Summary) map[string]int {
	return map[string]int{"scanned": s.Scanned, "eligible": s.Eligible, "ineligible": s.Ineligible, audit.ActionReplayed: s.Sent,
		"parked": s.Parked, "released": s.Released, "held_back": s.HeldBack, "failed": s.Failed, "uncertain": s.Uncertain,
		"delete_failed": s.DeleteFailed, "already_sent": s.SkippedDuplicates, "hold_lost": s.HoldLost, "abandoned": s.Abandoned,
		"not_parked": s.NotParked, "in_flight_elsewhere": s.InFlightElsewhere, "possible_duplicates": s.PossibleDuplicates}
}

// printHeldBack is the plan's line on the replay guard: how many messages
// it holds back, of which notifications, and where the record goes.
func printHeldBack(w io.Writer, o *ReplayOptions, p *pushreplay.Plan, n int) {
	where := "released untouched"
	if o.Ineligible == "park" {
		where = "parked"
	}
	if n > 0 {
		fmt.Fprintf(w, "  held back %d: their notification was replayed %d times or more already (--max-replays %d); they stay in the DLQ (%s)\n",
			n, o.MaxReplays, o.MaxReplays, where)
		return
	}
	fmt.Fprintf(w, "  held back 0 (--max-replays %d)\n", o.MaxReplays)
}

// auditErrorLine is an error of the audit's store in one line: the common
// AWS failures explained, naming --audit where the explanation names
// dla's --archive.
func auditErrorLine(err error) string {
	return strings.ReplaceAll(cmdutil.ErrorLine(err), "in --archive", "in --audit")
}

// unwritableError is the refusal of a run whose record cannot be begun,
// in one line (the store's error explained): nothing moved, exit 1 (4 for
// credentials or permission).
func unwritableError(u *audit.UnwritableError) error {
	code := cmdutil.ExitFailure
	if cmdutil.IsAuthError(u.Err) {
		code = cmdutil.ExitAuth
	}
	return &cmdutil.ExitError{Code: code, Err: fmt.Errorf("the audit record cannot be written to %s: %s; nothing was changed, every message is released (--no-audit runs without a record)",
		u.Where, auditErrorLine(u.Err))}
}

// exportRecord is the audit record of an export --delete (nil without
// --delete, or with --no-audit): begun before the first delete, one item
// per message deleted (or not), finished with the summary's counts.
type exportRecord struct {
	place   *auditPlace
	started audit.Started
	sum     *ExportSummary
	rec     *audit.Recorder
	file    string
}

// attach completes the started record once the DLQ is resolved.
func (e *exportRecord) attach(o *ExportOptions, dlq string, sum *ExportSummary) {
	if e == nil {
		return
	}
	e.sum, e.file = sum, o.Out
	e.started.Target = audit.Target{DLQ: dlq}
	e.started.Selection = map[string]any{"file": o.Out}
	if o.Resume {
		e.started.Selection["resume"] = true
	}
	if o.Max > 0 {
		e.started.Selection["max"] = o.Max
	}
}

// begin writes the started record, once, before the first delete; its
// error refuses the deletes (the file keeps what was read).
func (e *exportRecord) begin(ctx context.Context, f *Factory) error {
	if e == nil || e.rec != nil {
		return nil
	}
	e.started.Plan = map[string]int{"exported": e.sum.Exported, "resumed": e.sum.Resumed, "already_in_file": e.sum.AlreadyInFile}
	rec, err := f.beginAudit(ctx, e.place, e.started)
	var u *audit.UnwritableError
	if errors.As(err, &u) {
		return unwritableError(u)
	}
	if err != nil {
		return err
	}
	e.rec = rec
	return nil
}

// deleted records one message's delete.
func (e *exportRecord) deleted(m *sqsmove.Message, err error) {
	if e == nil || e.rec == nil {
		return
	}
	it := audit.Item{MessageID: m.MessageID, NotificationID: pushpolicy.NotificationID(m.Body), Action: "deleted", Result: "exported", MovedTo: e.file}
	if err != nil {
		it.Action, it.Error = "delete_failed", audit.RedactText(err.Error())
	}
	e.rec.Add(it)
}

// finish writes the finished record (when one was begun).
func (e *exportRecord) finish(ctx context.Context, f *Factory, err error) {
	if e == nil || e.rec == nil {
		return
	}
	s := e.sum
	finishAudit(ctx, f.IO.ErrOut, e.rec, map[string]int{"exported": s.Exported, "deleted": s.Deleted, "delete_failed": s.DeleteFailed,
		"released": s.Released, "already_in_file": s.AlreadyInFile, "resumed": s.Resumed}, err)
}

// processorRecord is the audit record of processor arm or disarm (nil
// with --no-audit): one item per setting changed and for the mapping.
type processorRecord struct {
	rec    *audit.Recorder
	counts map[string]int
}

// beginRecord writes the started record of arm or disarm, after the plan
// and the confirmation, before the first change; its error refuses the
// change (nothing written to the function).
func (o *ProcessorOptions) beginRecord(ctx context.Context, fn lambdactl.Function, verb string) (*processorRecord, error) {
	if o.Audit.NoAudit {
		fmt.Fprintln(o.Factory.IO.ErrOut, "audit: none (--no-audit)")
		return nil, nil
	}
	place, err := o.Factory.auditPlace(ctx, o.Audit.Location)
	if err != nil {
		return nil, err
	}
	s := o.started
	s.Target = audit.Target{Function: fn.ARN, DLQ: fn.Env[pushpolicy.EnvDLQURL]}
	s.Selection = map[string]any{"mapping": o.Mapping}
	if verb == "arm" {
		s.Selection["window"], s.Selection["codes"] = o.Window, o.Codes
		if o.MaxConcurrency > 0 {
			s.Selection["max_concurrency"] = o.MaxConcurrency
		}
	} else if o.Clear {
		s.Selection["clear"] = true
	}
	rec, err := o.Factory.beginAudit(ctx, place, s)
	var u *audit.UnwritableError
	if errors.As(err, &u) {
		return nil, &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("the audit record cannot be written to %s: %s; nothing was changed (--no-audit runs without a record)",
			u.Where, auditErrorLine(u.Err))}
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(o.Factory.IO.ErrOut, place.planLine())
	return &processorRecord{rec: rec, counts: map[string]int{"settings_changed": 0}}, nil
}

// settings records the PROCESS_* variables that changed.
func (p *processorRecord) settings(before, vars map[string]string) {
	if p == nil {
		return
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if was, ok := before[k]; ok && was == vars[k] {
			continue
		}
		p.rec.Add(audit.Item{Key: k, Action: "set", Result: vars[k]})
		p.counts["settings_changed"]++
	}
}

// mapping records the event source mapping enabled or disabled.
func (p *processorRecord) mapping(uuid, state string, concurrency *int32) {
	if p == nil {
		return
	}
	it := audit.Item{Key: "mapping " + uuid, Action: state}
	if concurrency != nil {
		it.Result = fmt.Sprintf("maximum concurrency %d", *concurrency)
	}
	p.rec.Add(it)
	p.counts["mapping_"+state]++
}

func (p *processorRecord) finish(ctx context.Context, f *Factory, err error) {
	if p == nil {
		return
	}
	finishAudit(ctx, f.IO.ErrOut, p.rec, p.counts, err)
}

// replayHistory is what trace and triage read of the audit: the recorded
// replays of each notification, and the guard's limit. A record that
// cannot be read is said once on stderr; the verb goes on without it
// (nil map).
type replayHistory struct {
	replays map[string][]audit.Replay
	max     int
	where   string
}

// readReplayHistory reads the replays recorded at --audit (or
// $DEADLETTER_AUDIT, or the local state directory).
func (f *Factory) readReplayHistory(ctx context.Context, location string, max int) *replayHistory {
	h := &replayHistory{max: max}
	place, err := f.auditPlace(ctx, location)
	if err == nil {
		h.where = place.where()
		h.replays, err = place.replays(ctx, f.IO.ErrOut)
	}
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "warning: the replay history could not be read (%s): the replays recorded are not shown\n", auditErrorLine(err))
		h.replays = nil
	}
	return h
}

// count is how many recorded runs replayed a notification.
func (h *replayHistory) count(id string) int {
	if h == nil {
		return 0
	}
	return len(h.replays[id])
}

// atLimit: a replay would hold the notification back.
func (h *replayHistory) atLimit(id string) bool {
	return h != nil && id != "" && audit.AtLimit(h.count(id), h.max)
}

// replaysLine is trace's line on a notification's recorded replays:
// "replayed 2 times: 2026-11-30 (role/ops-oncall, INC-9), 2026-12-01
// (role/ops-oncall, no reason given)".
func replaysLine(rs []audit.Replay) string {
	if len(rs) == 0 {
		return "replayed 0 times before (no recorded replay sent it)"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		why := r.Reason
		if why == "" {
			why = "no reason given"
		}
		parts[i] = fmt.Sprintf("%s (%s, %s)", r.At.UTC().Format("2006-01-02"), r.Actor.Who(), why)
	}
	return fmt.Sprintf("replayed %s: %s", output.Plural(len(rs), "time"), strings.Join(parts, ", "))
}
