package dlacmd

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
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
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
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
// back with --cleanup.
func runRecoverViaAPI(ctx context.Context, opts *RecoverOptions) error {
	f := opts.Factory
	for name, set := range map[string]bool{"--database-url": opts.DatabaseURL != "", "--db-secret": opts.DBSecret != "",
		"--keep": opts.Keep, "--offline": opts.Offline, "--leave-unreadable": opts.LeaveUnreadable,
		"--execution-sns-topic-arn, --granule-sns-topic-arn, --pdr-sns-topic-arn": opts.Topics.Execution != "" || opts.Topics.Granule != "" || opts.Topics.Pdr != ""} {
		if set {
			return cmdutil.UsageErrorf("%s does not go with --via-api: Cumulus's recovery uses its own database, AWS reads and topics", name)
		}
	}
	api, err := url.Parse(opts.ViaAPI)
	if err != nil || (api.Scheme != "https" && api.Scheme != "http") || api.Host == "" {
		return cmdutil.UsageErrorf("--via-api %q: want the Cumulus API's URL, https://...", opts.ViaAPI)
	}
	// The way back (--cleanup-staging) only moves objects in the archive:
	// it asks nothing of the API, so it needs no token, and the command
	// printed for it runs from any shell.
	token := ""
	if opts.CleanupStaging == "" {
		if token, err = apiToken(f, opts.TokenFile); err != nil {
			return err
		}
	}
	var scope selection.Scope
	var loc archive.Location
	if opts.CleanupStaging != "" {
		if loc, err = opts.Select.location(f); err != nil {
			return err
		}
		scope.Layout = dla.Layout{Stack: loc.Stack}
	} else if scope, loc, err = recoverScope(opts); err != nil {
		return err
	}
	if loc.Bucket == "" {
		return cmdutil.UsageErrorf("--via-api needs the archive in S3 (--archive s3://BUCKET/STACK): Cumulus reads it there")
	}
	staging := ""
	if opts.CleanupStaging != "" {
		staging = strings.TrimSuffix(opts.CleanupStaging, "/") + "/"
		base := scope.Layout.Root() + apirecover.StagingFolder
		if run, ok := strings.CutPrefix(staging, base); !ok || strings.Count(run, "/") != 1 || run == "/" || strings.HasPrefix(run, ".") {
			return cmdutil.UsageErrorf("--cleanup-staging %q: want a run's staging folder, %s<run>/", opts.CleanupStaging, base)
		}
	}
	store, err := f.OpenArchive(ctx, loc)
	if err != nil {
		return err
	}
	// Every command printed for the operator names this archive with this
	// invocation's AWS flags, quoted for the shell (dlaCommand).
	archiveArg := loc.String()
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	v := &apirecover.Run{Store: store, Layout: scope.Layout, Bucket: loc.Bucket,
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
	res := &apirecover.Result{Type: "via_api", API: opts.ViaAPI}
	target := audit.Target{Archive: loc.String(), API: audit.RedactText(opts.ViaAPI)}
	// Each move into staging and back out is an item of the record.
	meta := map[string]audit.Item{} // by key: the granules and execution the plan read
	v.Moved = func(from, to string) {
		if strings.HasPrefix(from, v.Staging) {
			it := meta[v.OriginalKey(from)]
			it.Key, it.Action, it.MovedTo = from, "moved back", to
			opts.audit.add(it)
			return
		}
		it := meta[from]
		it.Key, it.Action, it.MovedTo = from, "staged", to
		opts.audit.add(it)
	}

	if opts.CleanupStaging != "" { // only the way back
		v.Staging = staging
		res.Staging = v.Staging
		opts.audit.prepare(store, scope.Layout, target, map[string]any{"cleanup_staging": staging}, nil)
		opts.audit.planLine(f.IO.ErrOut)
		if err := opts.audit.begin(ctx, f.callerIdentity(true)); err != nil {
			return err
		}
		defer apirecover.DropManifest(context.WithoutCancel(ctx), store, v.Staging)
		back, left, err := v.Unstage(ctx)
		res.MovedBack, res.Left = back, left
		if err == nil {
			err = viaAPIFinish(opts, res, archiveArg)
		}
		opts.audit.finish(ctx, viaAPICounts(res), err, ctx.Err() != nil)
		return err
	}

	// The API and the token, before anything is read or staged.
	if err := v.Client.Check(ctx); err != nil {
		return fmt.Errorf("%w; nothing was staged", err)
	}

	plan := &dlarecover.Plan{ByDate: map[string]int{}, ByStatus: map[string]int{}, ByColl: map[string]int{},
		Database: "the Cumulus API at " + opts.ViaAPI + " (Cumulus's own recovery and database)", Archive: loc.String(), Area: string(scope.Area)}
	if plan.Spool, err = selection.NewSpool(); err != nil {
		return err
	}
	defer plan.Spool.Close()
	// Where Cumulus would copy each object that fails: the date of its
	// time (today without one) and its file name. An object it cannot read
	// it leaves in place.
	now := f.Now()
	plan.ByFailed = map[string][]string{}
	var unsure []apirecover.LeftOut // left out whatever their destination
	plan.CumulusFailed = func(key string, d *dla.Decoded) string {
		switch {
		case d == nil:
			unsure = append(unsure, apirecover.LeftOut{Key: key, Reason: apirecover.LeftOutUnreadable})
			return ""
		case strings.Contains(key, "%"):
			unsure = append(unsure, apirecover.LeftOut{Key: key, Reason: apirecover.LeftOutPercent})
			return ""
		}
		it := audit.Item{Execution: d.ExecutionArn, Granules: granuleIDs(d.Granules)}
		if it.Execution != "" || len(it.Granules) > 0 {
			meta[key] = it
		}
		date, certain := dla.CumulusFailureDate(apirecover.CumulusTime(d), now)
		if !certain {
			unsure = append(unsure, apirecover.LeftOut{Key: key, Reason: apirecover.LeftOutTime + " (" + apirecover.CumulusTime(d).Raw + ")"})
			return ""
		}
		return scope.Layout.DatePrefix(dla.AreaFailed, date) + path.Base(key)
	}
	if err := planRecovery(ctx, store, scope, opts, plan, progress); err != nil {
		return err
	}
	if res.LeftOut, err = v.Clashes(ctx, plan.ByFailed); err != nil {
		return err
	}
	res.LeftOut = append(unsure, res.LeftOut...)
	leftOut := make(map[string]bool, len(res.LeftOut))
	for _, l := range res.LeftOut {
		leftOut[l.Key] = true
	}
	opts.audit.prepare(store, scope.Layout, target, selectionOf(&opts.Select, len(scope.Keys)),
		map[string]int{"objects": plan.Objects, "unreadable": plan.Unreadable, "left_out": len(res.LeftOut)})
	printPlan(f.IO.ErrOut, plan, opts, snspub.Topics{})
	if plan.Objects == 0 {
		fmt.Fprintln(f.IO.ErrOut, "nothing to recover")
		return nil
	}
	if len(res.LeftOut) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "  left out: %s that Cumulus's recovery could overwrite in failed-sqs/ (listed at the end)\n", output.Plural(len(res.LeftOut), "object"))
	}
	recoverAuditLine(opts)
	if opts.DryRun {
		fmt.Fprintln(f.IO.ErrOut, "dry run: nothing was staged, Cumulus was not asked")
		// The result says what the run would leave out (exit 3, as the
		// run itself).
		return viaAPIFinish(opts, res, archiveArg)
	}
	if len(res.LeftOut) == plan.Objects {
		fmt.Fprintln(f.IO.ErrOut, "nothing staged: every object was left out")
		return viaAPIFinish(opts, res, archiveArg)
	}
	if !opts.Yes {
		ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Recover %s through the Cumulus API at %s?", output.Plural(plan.Objects, "object"), opts.ViaAPI), "yes")
		if err != nil || !ok {
			fmt.Fprintln(f.IO.ErrOut, "nothing staged, nothing changed")
			return cmp.Or(err, error(cmdutil.ErrNotConfirmed))
		}
	}
	// The record goes down before the first object moves: a record that
	// cannot be written refuses the run, nothing staged.
	if err := opts.audit.begin(ctx, f.callerIdentity(true)); err != nil {
		return err
	}
	err = viaAPIStageAndRun(ctx, opts, v, res, plan, leftOut, loc, archiveArg)
	opts.audit.finish(ctx, viaAPICounts(res), err, ctx.Err() != nil)
	return err
}

// viaAPIStageAndRun stages the selection, runs Cumulus's recovery on it
// and watches it to its end, recording each object's outcome.
func viaAPIStageAndRun(ctx context.Context, opts *RecoverOptions, v *apirecover.Run, res *apirecover.Result, plan *dlarecover.Plan,
	leftOut map[string]bool, loc archive.Location, archiveArg string) (err error) {
	f := opts.Factory
	store := v.Store
	v.Staging = apirecover.NewStaging(v.Layout, f.Now())
	res.Staging = v.Staging
	// Recorded before the first object moves, so that a run killed while
	// staging leaves a folder every verb warns about (warnStaging).
	if err := apirecover.WriteManifest(ctx, store, apirecover.Manifest{Type: "recover_staging", Staging: v.Staging, API: opts.ViaAPI,
		Archive: loc.String(), Created: f.Now().UTC(), Selected: plan.Objects - len(res.LeftOut)}); err != nil {
		return err
	}
	defer apirecover.DropManifest(context.WithoutCancel(ctx), store, v.Staging)
	fmt.Fprintf(f.IO.ErrOut, "staging into %s; if this run is stopped, move what is there back with: %s\n",
		output.Escape(v.Staging), v.CleanupCommand(v.Staging))
	keys := func(yield func(string) error) error {
		return plan.Spool.Keys(func(k string) error {
			if leftOut[k] {
				return nil
			}
			return yield(k)
		})
	}
	if res.Staged, err = v.Stage(ctx, keys, plan.Objects-len(res.LeftOut)); err != nil {
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
func viaAPIOutcomeItems(opts *RecoverOptions, v *apirecover.Run, res *apirecover.Result, plan *dlarecover.Plan) {
	if opts.audit == nil || opts.audit.rec == nil {
		return
	}
	failedTo := map[string]string{}
	for dst, keys := range plan.ByFailed {
		for _, k := range keys {
			failedTo[k] = dst
		}
	}
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
