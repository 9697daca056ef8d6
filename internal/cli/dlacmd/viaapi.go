package dlacmd

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusapi"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/workflow/apirecover"
)

// apiToken reads the Cumulus API token: --token-file, else
// $CUMULUS_API_TOKEN. It is never taken from a flag's value, and never
// printed.
func apiToken(f *Factory, tokenFile string) (string, error) {
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", cmdutil.UsageErrorf("--token-file: %v", err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", cmdutil.UsageErrorf("--token-file %s is empty", tokenFile)
	}
	if t := strings.TrimSpace(f.Getenv("CUMULUS_API_TOKEN")); t != "" {
		return t, nil
	}
	return "", cmdutil.UsageErrorf("--via-api needs a token: --token-file FILE, or CUMULUS_API_TOKEN")
}

// runRecoverViaAPI is dla recover --via-api: the selection is planned and
// confirmed as for a local recovery, moved into a staging folder, and
// handed to Cumulus's own recovery (POST /deadLetterArchive/
// recoverCumulusMessages with that folder as its path), which is then
// watched to its end. What Cumulus leaves in staging is reported, and moved
// back with --cleanup. With --cleanup-staging it is only the way back.
func runRecoverViaAPI(ctx context.Context, opts *RecoverOptions) error {
	f := opts.Factory
	token, err := viaAPICheckFlags(opts)
	if err != nil {
		return err
	}
	scope, loc, err := viaAPIScope(opts)
	if err != nil {
		return err
	}
	store, err := f.OpenArchive(ctx, loc)
	if err != nil {
		return err
	}
	// Every command printed for the operator names this archive with this
	// invocation's AWS flags, quoted for the shell (dlaCommand).
	archiveArg := loc.String()
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	v := newAPIRun(opts, store, scope.Layout, loc, token, progress, archiveArg)
	res := &apirecover.Result{Type: "via_api", API: opts.ViaAPI}
	target := audit.Target{Archive: loc.String(), API: audit.RedactText(opts.ViaAPI)}
	if opts.CleanupStaging != "" {
		return viaAPICleanup(ctx, opts, v, res, target, archiveArg)
	}

	// The API and the token, before anything is read or staged.
	if err := v.Client.Check(ctx); err != nil {
		return fmt.Errorf("%w; nothing was staged", err)
	}
	plan, err := v.Plan(ctx, scope, apirecover.PlanOptions{API: opts.ViaAPI, Archive: loc.String(), IncludeUnreadable: opts.IncludeUnreadable,
		Now: f.Now(), Stop: stopOnAuth, Progress: func(n int) { progress.Update("planning: %d objects", n) }})
	progress.Clear()
	if err != nil {
		return err
	}
	defer plan.Close()
	recordMoves(opts, v, plan.Items)
	res.LeftOut = plan.LeftOut
	opts.audit.prepare(store, scope.Layout, target, selectionOf(&opts.Select, len(scope.Keys)),
		map[string]int{"objects": plan.Objects, "unreadable": plan.Unreadable, "left_out": len(res.LeftOut)})
	printPlan(f.IO.ErrOut, plan.Plan, opts, snspub.Topics{})
	if proceed, err := viaAPIProceed(opts, plan, res, archiveArg); !proceed {
		return err
	}
	// The record goes down before the first object moves: a record that
	// cannot be written refuses the run, nothing staged.
	if err := opts.audit.begin(ctx, f.callerIdentity(true)); err != nil {
		return err
	}
	err = viaAPIStageAndRun(ctx, opts, v, res, plan, loc, archiveArg)
	opts.audit.finish(ctx, viaAPICounts(res), err, ctx.Err() != nil)
	return err
}

// viaAPICheckFlags refuses what does not go with --via-api and returns the
// API token (none for the way back, which asks nothing of the API, so
// that the command printed for it runs from any shell).
func viaAPICheckFlags(opts *RecoverOptions) (token string, err error) {
	for name, set := range map[string]bool{"--database-url": opts.DatabaseURL != "", "--db-secret": opts.DBSecret != "",
		"--keep": opts.Keep, "--offline": opts.Offline, "--leave-unreadable": opts.LeaveUnreadable,
		"--execution-sns-topic-arn, --granule-sns-topic-arn, --pdr-sns-topic-arn": opts.Topics.Execution != "" || opts.Topics.Granule != "" || opts.Topics.Pdr != ""} {
		if set {
			return "", cmdutil.UsageErrorf("%s does not go with --via-api: Cumulus's recovery uses its own database, AWS reads and topics", name)
		}
	}
	api, err := url.Parse(opts.ViaAPI)
	if err != nil || (api.Scheme != "https" && api.Scheme != "http") || api.Host == "" {
		return "", cmdutil.UsageErrorf("--via-api %q: want the Cumulus API's URL, https://...", opts.ViaAPI)
	}
	if opts.CleanupStaging != "" {
		return "", nil
	}
	return apiToken(opts.Factory, opts.TokenFile)
}

// viaAPIScope is the selection (only the archive's layout for the way
// back, whose staging folder it checks) and the archive, which must be in
// S3: Cumulus reads it there.
func viaAPIScope(opts *RecoverOptions) (scope selection.Scope, loc archive.Location, err error) {
	if opts.CleanupStaging != "" {
		if loc, err = opts.Select.location(opts.Factory); err != nil {
			return scope, loc, err
		}
		scope.Layout = dla.Layout{Stack: loc.Stack}
	} else if scope, loc, err = recoverScope(opts); err != nil {
		return scope, loc, err
	}
	if loc.Bucket == "" {
		return scope, loc, cmdutil.UsageErrorf("--via-api needs the archive in S3 (--archive s3://BUCKET/STACK): Cumulus reads it there")
	}
	if opts.CleanupStaging != "" {
		staging := strings.TrimSuffix(opts.CleanupStaging, "/") + "/"
		base := scope.Layout.Root() + apirecover.StagingFolder
		if run, ok := strings.CutPrefix(staging, base); !ok || strings.Count(run, "/") != 1 || run == "/" || strings.HasPrefix(run, ".") {
			return scope, loc, cmdutil.UsageErrorf("--cleanup-staging %q: want a run's staging folder, %s<run>/", opts.CleanupStaging, base)
		}
	}
	return scope, loc, nil
}

// newAPIRun is the run's apirecover.Run: its client, polling, and what it
// prints.
func newAPIRun(opts *RecoverOptions, store archive.Store, layout dla.Layout, loc archive.Location, token string, progress *cmdutil.Progress, archiveArg string) *apirecover.Run {
	f := opts.Factory
	v := &apirecover.Run{Store: store, Layout: layout, Bucket: loc.Bucket,
		Client:  &cumulusapi.Client{BaseURL: opts.ViaAPI, Token: token, Backoff: f.apiPoll(time.Second)},
		PollMin: f.apiPoll(2 * time.Second), PollMax: f.apiPoll(30 * time.Second),
		Logf: func(format string, args ...any) {
			// What the archive or Cumulus hold is escaped on stderr.
			for i, a := range args {
				if s, ok := a.(string); ok {
					args[i] = output.Escape(s)
				}
			}
			progress.Clear()
			fmt.Fprintf(f.IO.ErrOut, format+"\n", args...)
		},
		CleanupCommand: func(staging string) string {
			return cleanupStagingCommand(f, archiveArg, opts.ViaAPI, staging)
		},
		Progress: progress.Update, Clear: progress.Clear}
	return v
}

// recordMoves makes each move into staging and back out an item of the
// record, with the execution and granules the plan read (items, by key).
func recordMoves(opts *RecoverOptions, v *apirecover.Run, items map[string]audit.Item) {
	v.Moved = func(from, to string) {
		if strings.HasPrefix(from, v.Staging) {
			it := items[v.OriginalKey(from)]
			it.Key, it.Action, it.MovedTo = from, "moved back", to
			opts.audit.add(it)
			return
		}
		it := items[from]
		it.Key, it.Action, it.MovedTo = from, "staged", to
		opts.audit.add(it)
	}
}

// viaAPICleanup is --cleanup-staging: the staging folder's objects moved
// back where they were, recorded.
func viaAPICleanup(ctx context.Context, opts *RecoverOptions, v *apirecover.Run, res *apirecover.Result, target audit.Target, archiveArg string) error {
	f := opts.Factory
	v.Staging = strings.TrimSuffix(opts.CleanupStaging, "/") + "/"
	res.Staging = v.Staging
	recordMoves(opts, v, nil) // the way back reads no object: no granules to name
	opts.audit.prepare(v.Store, v.Layout, target, map[string]any{"cleanup_staging": v.Staging}, nil)
	opts.audit.planLine(f.IO.ErrOut)
	if err := opts.audit.begin(ctx, f.callerIdentity(true)); err != nil {
		return err
	}
	defer apirecover.DropManifest(context.WithoutCancel(ctx), v.Store, v.Staging)
	back, left, err := v.Unstage(ctx)
	res.MovedBack, res.Left = back, left
	if err == nil {
		err = viaAPIFinish(opts, res, archiveArg)
	}
	opts.audit.finish(ctx, viaAPICounts(res), err, ctx.Err() != nil)
	return err
}

// viaAPIProceed says whether the run goes on to stage, after the plan was
// printed: not when nothing is selected, on a dry run, when everything is
// left out, or when the operator does not confirm; err is then what the
// command returns.
func viaAPIProceed(opts *RecoverOptions, plan *apirecover.Planned, res *apirecover.Result, archiveArg string) (bool, error) {
	f := opts.Factory
	if plan.Objects == 0 {
		fmt.Fprintln(f.IO.ErrOut, "nothing to recover")
		return false, nil
	}
	if len(res.LeftOut) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "  left out: %s that Cumulus's recovery could overwrite in failed-sqs/ (listed at the end)\n", output.Plural(len(res.LeftOut), "object"))
	}
	recoverAuditLine(opts)
	if opts.DryRun {
		fmt.Fprintln(f.IO.ErrOut, "dry run: nothing was staged, Cumulus was not asked")
		// The result says what the run would leave out (exit 3, as the
		// run itself).
		return false, viaAPIFinish(opts, res, archiveArg)
	}
	if plan.ToStage() == 0 {
		fmt.Fprintln(f.IO.ErrOut, "nothing staged: every object was left out")
		return false, viaAPIFinish(opts, res, archiveArg)
	}
	if !opts.Yes {
		ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Recover %s through the Cumulus API at %s?", output.Plural(plan.Objects, "object"), opts.ViaAPI), "yes")
		if err != nil || !ok {
			fmt.Fprintln(f.IO.ErrOut, "nothing staged, nothing changed")
			return false, cmp.Or(err, error(cmdutil.ErrNotConfirmed))
		}
	}
	return true, nil
}

// viaAPIStageAndRun stages the selection, runs Cumulus's recovery on it
// and watches it to its end, recording each object's outcome.
func viaAPIStageAndRun(ctx context.Context, opts *RecoverOptions, v *apirecover.Run, res *apirecover.Result, plan *apirecover.Planned,
	loc archive.Location, archiveArg string) (err error) {
	f := opts.Factory
	store := v.Store
	v.Staging = apirecover.NewStaging(v.Layout, f.Now())
	res.Staging = v.Staging
	// Recorded before the first object moves, so that a run killed while
	// staging leaves a folder every verb warns about (warnStaging).
	if err := apirecover.WriteManifest(ctx, store, apirecover.Manifest{Type: "recover_staging", Staging: v.Staging, API: opts.ViaAPI,
		Archive: loc.String(), Created: f.Now().UTC(), Selected: plan.ToStage()}); err != nil {
		return err
	}
	defer apirecover.DropManifest(context.WithoutCancel(ctx), store, v.Staging)
	fmt.Fprintf(f.IO.ErrOut, "staging into %s; if this run is stopped, move what is there back with: %s\n",
		output.Escape(v.Staging), v.CleanupCommand(v.Staging))
	if res.Staged, err = v.Stage(ctx, plan.StageKeys, plan.ToStage()); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "staged %s in %s\n", output.Plural(res.Staged, "object"), output.Escape(v.Staging))
	if err := v.StartAndWait(ctx, res); err != nil {
		return err
	}
	viaAPIOutcomeItems(opts, v, res, plan)
	if res.Left, err = v.Leftovers(ctx); err != nil {
		return err
	}
	for _, k := range res.Left {
		opts.audit.add(audit.Item{Key: v.OriginalKey(k), Result: "left", Action: "left in staging", MovedTo: k})
	}
	if opts.Cleanup && len(res.Left) > 0 {
		back, left, err := v.Unstage(ctx)
		res.MovedBack, res.Left = back, left
		if err != nil {
			return err
		}
	}
	return viaAPIFinish(opts, res, archiveArg)
}

// viaAPIFinish prints the summary and turns the outcome into the exit code:
// 0 when Cumulus recovered everything, 3 when objects failed or are still
// in staging, 1 when the operation failed.
// archiveArg is the archive as the printed commands name it.
func viaAPIFinish(opts *RecoverOptions, res *apirecover.Result, archiveArg string) error {
	f := opts.Factory
	if res.Left == nil {
		res.Left = []string{}
	}
	if res.LeftOut == nil {
		res.LeftOut = []apirecover.LeftOut{}
	}
	switch opts.Output.Value {
	case "json": // one object
		if err := output.WriteJSON(output.JSONOut(f.IO), res); err != nil {
			return err
		}
	case "ndjson": // one line
		js := output.NewJSONStream(output.JSONOut(f.IO), true)
		if err := js.Write(res); err != nil {
			return err
		}
		if err := js.Close(); err != nil {
			return err
		}
	}
	w := f.IO.ErrOut
	if res.OperationID != "" {
		fmt.Fprintf(w, "Cumulus operation %s %s: %d recovered, %d failed (moved by Cumulus to failed-sqs/)\n",
			output.Escape(res.OperationID), output.Escape(res.Status), res.Succeeded, res.Failed)
	}
	if res.MovedBack > 0 {
		fmt.Fprintf(w, "moved back from staging: %s\n", output.Plural(res.MovedBack, "object"))
	}
	viaAPILeftOut(opts, res, archiveArg)
	if len(res.Left) > 0 {
		fmt.Fprintf(w, "left in staging (%s):\n", output.Escape(res.Staging))
		for _, k := range res.Left {
			fmt.Fprintf(w, "  %s\n", output.Escape(k))
		}
		fmt.Fprintf(w, "move them back with: %s\n", cleanupStagingCommand(f, archiveArg, opts.ViaAPI, res.Staging))
	}
	switch {
	case res.OperationID != "" && res.Status != "SUCCEEDED":
		return &cmdutil.ExitError{Code: cmdutil.ExitFailure}
	case res.Failed > 0 || len(res.Left) > 0 || len(res.LeftOut) > 0:
		return cmdutil.PartialError
	}
	return nil
}

// viaAPILeftOut names the objects left out and the command that recovers
// them here, where a failure's move never replaces an object: a dry run of
// exactly those keys, first.
func viaAPILeftOut(opts *RecoverOptions, res *apirecover.Result, archiveArg string) {
	if len(res.LeftOut) == 0 {
		return
	}
	w := opts.Factory.IO.ErrOut
	fmt.Fprintf(w, "left out, in place (Cumulus's recovery replaces what is at a failure's failed-sqs/ name):\n")
	for _, l := range res.LeftOut {
		dst := l.Destination
		if dst == "" {
			dst = "?"
		}
		fmt.Fprintf(w, "  %s -> %s: %s\n", output.OneLine(l.Key), output.OneLine(dst), output.OneLine(l.Reason))
	}
	words := []string{"--dry-run", "--"}
	for _, l := range res.LeftOut {
		words = append(words, l.Key)
	}
	fmt.Fprintf(w, "recover them here instead (a failure goes to the next free name, never over another object), into the database\n"+
		"of $DATABASE_URL (or add --database-url or --db-secret); a dry run first, then the same without --dry-run:\n  %s\n",
		dlaCommand(opts.Factory, archiveArg, "recover", words...))
}

// viaAPIOutcomeItems records what Cumulus's operation did to each staged
// object: written and deleted, or failed and moved to failed-sqs/.
func viaAPIOutcomeItems(opts *RecoverOptions, v *apirecover.Run, res *apirecover.Result, plan *apirecover.Planned) {
	if opts.audit == nil || opts.audit.rec == nil {
		return
	}
	failedTo := plan.FailedTo()
	orig := func(k string) string {
		if strings.HasPrefix(k, v.Staging) {
			return v.OriginalKey(k)
		}
		return k
	}
	for _, k := range res.SucceededKeys {
		opts.audit.add(audit.Item{Key: orig(k), Result: "written", Action: "deleted by Cumulus"})
	}
	for _, k := range res.FailedKeys {
		o := orig(k)
		opts.audit.add(audit.Item{Key: o, Result: "failed", Action: "moved by Cumulus", MovedTo: failedTo[o]})
	}
}

// viaAPICounts are a --via-api run's counts, for the audit record.
func viaAPICounts(res *apirecover.Result) map[string]int {
	return map[string]int{"staged": res.Staged, "succeeded": res.Succeeded, "failed": res.Failed,
		"left_in_staging": len(res.Left), "moved_back": res.MovedBack, "left_out": len(res.LeftOut)}
}
