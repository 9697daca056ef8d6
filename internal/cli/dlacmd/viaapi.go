package dlacmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusapi"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// StagingFolder is where --via-api moves a selection for Cumulus to
// recover: <stack>/dead-letter-archive/recover-staging/<run>/, beside sqs/
// (so that Cumulus's own default path never sees it) and inside the
// archive (so that every rule that keeps dla inside the archive holds).
// Under it each object keeps its key below the archive root
// (sqs/<date>/<name>), so the way back is the key itself, and so that
// Cumulus's failed-sqs key, which it makes from the object's time and file
// name alone, is the one it would have made for the object in place.
const StagingFolder = "recover-staging/"

// ViaAPIResult is the summary of a recovery through the Cumulus API.
type ViaAPIResult struct {
	Type        string   `json:"type"` // "via_api"
	API         string   `json:"api"`
	OperationID string   `json:"operation_id"`
	Status      string   `json:"status"`
	Staging     string   `json:"staging"`
	Staged      int      `json:"staged"`
	Succeeded   int      `json:"succeeded"`
	Failed      int      `json:"failed"`
	Left        []string `json:"left_in_staging"`
	MovedBack   int      `json:"moved_back"`
	// LeftOut are the objects of the selection that were not handed to
	// Cumulus, and why: its recovery copies a failure to
	// failed-sqs/<date>/<name> and replaces what is there.
	LeftOut []LeftOut `json:"left_out"`
}

// LeftOut is an object --via-api did not stage.
type LeftOut struct {
	Key string `json:"key"`
	// Destination is where Cumulus would copy it if it failed.
	Destination string `json:"destination"`
	Reason      string `json:"reason"`
}

// cumulusTime is the time Cumulus's getDLAFailureKey dates a failure by:
// the "time" at the top of the object it parsed (the last one, as
// JSON.parse keeps), whatever the object's generation; a Null result
// without one. (dla's own Time falls back to the event's, which Cumulus
// does not.)
func cumulusTime(d *dla.Decoded) gjson.Result {
	var v gjson.Result
	if len(d.Layers) > 0 {
		for _, f := range d.Layers[0].Metadata {
			if f.Name == "time" {
				v = gjson.Parse(f.Raw)
			}
		}
		return v
	}
	gjson.Parse(d.Event).ForEach(func(k, val gjson.Result) bool {
		if k.Str == "time" {
			v = val
		}
		return true
	})
	return v
}

// Why an object is left out of a --via-api run before its destination is
// looked at.
const (
	leftOutUnreadable = "dla cannot read it, so where Cumulus would copy it cannot be told (Cumulus skips what it cannot parse, and copies the rest)"
	leftOutTime       = "its time is one dla cannot date as Cumulus would, so where Cumulus would copy it cannot be told"
	leftOutPercent    = "its key holds '%': Cumulus sends the copy source unencoded, and S3 would copy the object of the decoded key instead"
)

// clashes finds the objects Cumulus's recovery could lose: two objects of
// the selection whose failures it would copy to the same failed-sqs/ key
// (the date of their time and their file name), or one whose key there is
// taken already. Cumulus's CopyObject replaces the object at the
// destination, so the second failure would overwrite the first. The first
// object of each name goes to Cumulus; the others are left where they are.
// byFailed is the selection's keys by that destination, in selection
// order.
func (v *viaAPI) clashes(ctx context.Context, byFailed map[string][]string) ([]LeftOut, error) {
	dests := make([]string, 0, len(byFailed))
	folders := map[string]bool{}
	for dst := range byFailed {
		dests = append(dests, dst)
		folders[dst[:strings.LastIndex(dst, "/")+1]] = true
	}
	sort.Strings(dests)
	// An object of the selection does not take its own destination: it is
	// moved into staging before Cumulus copies anything (recover --failed
	// of an object already at its failed-sqs/ name).
	selected := map[string]bool{}
	for _, keys := range byFailed {
		for _, k := range keys {
			selected[k] = true
		}
	}
	taken := map[string]bool{}
	for folder := range folders {
		err := v.store.List(ctx, folder, true, func(e archive.Entry) error {
			if !selected[e.Key] {
				taken[e.Key] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing %s for names Cumulus would replace: %w", folder, err)
		}
	}
	var out []LeftOut
	for _, dst := range dests {
		keys := byFailed[dst]
		if taken[dst] {
			for _, k := range keys {
				out = append(out, LeftOut{Key: k, Destination: dst,
					Reason: "its failed-sqs/ name is taken: Cumulus's copy would replace that object"})
			}
			continue
		}
		for _, k := range keys[1:] {
			out = append(out, LeftOut{Key: k, Destination: dst,
				Reason: "it has the failed-sqs/ name of " + keys[0] + ", which goes to Cumulus: one failure's copy would replace the other's"})
		}
	}
	return out, nil
}

// viaAPI runs one recovery through Cumulus.
type viaAPI struct {
	f       *Factory
	store   archive.Store
	layout  dla.Layout
	bucket  string
	client  *cumulusapi.Client
	staging string
	// PollMin and PollMax bound the waits between polls (2 s to 30 s).
	pollMin, pollMax time.Duration
	progress         *cmdutil.Progress
}

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

// newStaging names a run's staging folder: its time and a random suffix.
func newStaging(layout dla.Layout, now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return layout.Root() + StagingFolder + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]) + "/"
}

// stagedKey is where key goes in staging, and originalKey the way back.
func (v *viaAPI) stagedKey(key string) string {
	return v.staging + strings.TrimPrefix(key, v.layout.Root())
}

func (v *viaAPI) originalKey(staged string) string {
	return v.layout.Root() + strings.TrimPrefix(staged, v.staging)
}

// stage moves every key into the staging folder (copy, read back, delete:
// archive.Move). On an error it moves back what it staged.
func (v *viaAPI) stage(ctx context.Context, keys func(yield func(string) error) error, total int) (int, error) {
	n := 0
	err := keys(func(key string) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		dst := v.stagedKey(key)
		moved, err := archive.Move(ctx, v.store, key, dst)
		if errors.Is(err, archive.ErrSourceGone) {
			// Another run took it (its own staging, a recovery): ours is a
			// second copy, and goes; the object is that run's to recover.
			if body, gerr := v.store.Get(ctx, moved); gerr == nil {
				if derr := archive.DeleteIfUnchanged(ctx, v.store, moved, body); derr == nil {
					fmt.Fprintf(v.f.IO.ErrOut, "dla: %s was taken by another run meanwhile; not staged\n", output.Escape(key))
					return nil
				}
			}
		}
		if err != nil {
			// A copy may be in staging, and the original may or may not
			// be left (a delete whose outcome is unknown): unstage moves
			// the copy back, to the next free name if the original is
			// there, so the object is never lost, at worst doubled.
			return fmt.Errorf("staging %s: %w", key, err)
		}
		if moved != dst { // another object had the name: not ours to move back by name
			return fmt.Errorf("staging %s: %s was taken; the object is at %s", key, dst, moved)
		}
		n++
		v.progress.Update("staging: %d/%d objects", n, total)
		return nil
	})
	v.progress.Clear()
	if err == nil {
		return n, nil
	}
	back, left, uerr := v.unstage(context.WithoutCancel(ctx))
	msg := fmt.Sprintf("%v; the %d staged objects were moved back", err, back)
	if uerr != nil || len(left) > 0 {
		msg = fmt.Sprintf("%v; moving the staged objects back: %d moved, %d left in %s (%v)", err, back, len(left), v.staging, uerr)
	}
	return n, errors.New(msg)
}

// hint says that an operation may still be working on the staging folder,
// and how to move back what it leaves.
func (v *viaAPI) hint(opID string) {
	if opID != "" {
		fmt.Fprintf(v.f.IO.ErrOut, "dla: stopped watching; the operation goes on in Cumulus (GET /asyncOperations/%s).\n", output.Escape(opID))
	}
	fmt.Fprintf(v.f.IO.ErrOut, "dla: once it ends, move what it left back with: dla recover --archive s3://%s/%s --via-api %s --cleanup-staging %s\n",
		v.bucket, strings.TrimSuffix(v.layout.Stack, "/"), v.client.BaseURL, output.Escape(v.staging))
}

// leftovers lists what is still in the staging folder.
func (v *viaAPI) leftovers(ctx context.Context) ([]string, error) {
	var keys []string
	err := v.store.List(ctx, v.staging, false, func(e archive.Entry) error {
		keys = append(keys, e.Key)
		return nil
	})
	return keys, err
}

// unstage moves everything left in staging back to its key. An object
// whose key was taken meanwhile goes to the next free name (archive.Move
// never replaces an object) and is named in left.
func (v *viaAPI) unstage(ctx context.Context) (int, []string, error) {
	keys, err := v.leftovers(ctx)
	if err != nil {
		return 0, keys, err
	}
	n := 0
	var left []string
	for _, k := range keys {
		orig := v.originalKey(k)
		if v.sameAsOriginal(ctx, k, orig) { // a staging move stopped before its delete
			n++
			continue
		}
		moved, err := archive.Move(ctx, v.store, k, orig)
		switch {
		case err != nil:
			left = append(left, k)
			fmt.Fprintf(v.f.IO.ErrOut, "dla: could not move %s back to %s: %v\n", output.Escape(k), output.Escape(orig), err)
		case moved != orig:
			n++
			fmt.Fprintf(v.f.IO.ErrOut, "dla: %s was taken; %s went back to %s\n", output.Escape(orig), output.Escape(k), output.Escape(moved))
		default:
			n++
		}
	}
	return n, left, nil
}

// sameAsOriginal drops a staged copy whose original is still in place with
// the same bytes (a staging move that stopped between its copy and its
// delete): moving it back would make a second object.
func (v *viaAPI) sameAsOriginal(ctx context.Context, staged, orig string) bool {
	there, err := v.store.Get(ctx, orig)
	if err != nil {
		return false
	}
	body, err := v.store.Get(ctx, staged)
	if err != nil || !bytes.Equal(body, there) {
		return false
	}
	return archive.DeleteIfUnchanged(ctx, v.store, staged, body) == nil
}

// run starts Cumulus's recovery of the staging folder and waits for it.
func (v *viaAPI) run(ctx context.Context, res *ViaAPIResult) error {
	op, err := v.client.RecoverCumulusMessages(ctx, v.bucket, v.staging)
	if err != nil && cumulusapi.NotStarted(err) {
		back, left, _ := v.unstage(context.WithoutCancel(ctx))
		return fmt.Errorf("%w; nothing was recovered, and %d staged objects were moved back (%d left in %s)", err, back, len(left), v.staging)
	}
	if err != nil { // the request may have reached Cumulus: leave staging to it
		v.hint("")
		return fmt.Errorf("%w; Cumulus may have started recovering %s all the same, so the staged objects stay there", err, v.staging)
	}
	res.OperationID = op.ID
	fmt.Fprintf(v.f.IO.ErrOut, "Cumulus async operation %s started on %s\n", output.Escape(op.ID), output.Escape(v.staging))
	start := time.Now()
	wait := v.pollMin
	for !op.Done() {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			v.progress.Clear()
			v.hint(op.ID)
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, v.pollMax)
		if op, err = v.client.AsyncOperation(ctx, res.OperationID); err != nil {
			v.progress.Clear()
			v.hint(res.OperationID)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w; the operation may still be running: GET /asyncOperations/%s, staging %s", err, res.OperationID, v.staging)
		}
		left, _ := v.leftovers(ctx)
		v.progress.Update("Cumulus operation %s: %s, %s, %d of %d objects still in staging", op.ID, op.Status, time.Since(start).Round(time.Second), len(left), res.Staged)
	}
	v.progress.Clear()
	res.Status = op.Status
	var out cumulusapi.RecoveryOutput
	if op.Succeeded() && json.Unmarshal([]byte(op.Output), &out) == nil {
		res.Succeeded, res.Failed = len(out.ProcessingSucceededKeys), len(out.ProcessingFailedKeys)
	}
	if !op.Succeeded() {
		fmt.Fprintf(v.f.IO.ErrOut, "dla: Cumulus operation %s ended %s: %s\n", output.Escape(op.ID), output.Escape(op.Status), output.Escape(firstLine(op.Output)))
	}
	return nil
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
	token, err := apiToken(f, opts.TokenFile)
	if err != nil {
		return err
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
		base := scope.Layout.Root() + StagingFolder
		if run, ok := strings.CutPrefix(staging, base); !ok || strings.Count(run, "/") != 1 || run == "/" || strings.HasPrefix(run, ".") {
			return cmdutil.UsageErrorf("--cleanup-staging %q: want a run's staging folder, %s<run>/", opts.CleanupStaging, base)
		}
	}
	store, err := f.OpenArchive(ctx, loc)
	if err != nil {
		return err
	}
	v := &viaAPI{f: f, store: store, layout: scope.Layout, bucket: loc.Bucket,
		client:  &cumulusapi.Client{BaseURL: opts.ViaAPI, Token: token, Backoff: f.apiPoll(time.Second)},
		pollMin: f.apiPoll(2 * time.Second), pollMax: f.apiPoll(30 * time.Second),
		progress: cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())}
	res := &ViaAPIResult{Type: "via_api", API: opts.ViaAPI}

	if opts.CleanupStaging != "" { // only the way back
		v.staging = staging
		res.Staging = v.staging
		defer dropManifest(context.WithoutCancel(ctx), store, v.staging)
		back, left, err := v.unstage(ctx)
		res.MovedBack, res.Left = back, left
		if err != nil {
			return err
		}
		return viaAPIFinish(opts, res)
	}

	// The API and the token, before anything is read or staged.
	if err := v.client.Check(ctx); err != nil {
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
	var unsure []LeftOut // left out whatever their destination
	plan.CumulusFailed = func(key string, d *dla.Decoded) string {
		switch {
		case d == nil:
			unsure = append(unsure, LeftOut{Key: key, Reason: leftOutUnreadable})
			return ""
		case strings.Contains(key, "%"):
			unsure = append(unsure, LeftOut{Key: key, Reason: leftOutPercent})
			return ""
		}
		date, certain := dla.CumulusFailureDate(cumulusTime(d), now)
		if !certain {
			unsure = append(unsure, LeftOut{Key: key, Reason: leftOutTime + " (" + cumulusTime(d).Raw + ")"})
			return ""
		}
		return scope.Layout.DatePrefix(dla.AreaFailed, date) + path.Base(key)
	}
	if err := planRecovery(ctx, store, scope, opts, plan, v.progress); err != nil {
		return err
	}
	if res.LeftOut, err = v.clashes(ctx, plan.ByFailed); err != nil {
		return err
	}
	res.LeftOut = append(unsure, res.LeftOut...)
	leftOut := make(map[string]bool, len(res.LeftOut))
	for _, l := range res.LeftOut {
		leftOut[l.Key] = true
	}
	printPlan(f.IO.ErrOut, plan, opts, snspub.Topics{})
	if plan.Objects == 0 {
		fmt.Fprintln(f.IO.ErrOut, "nothing to recover")
		return nil
	}
	if len(res.LeftOut) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "  left out: %s that Cumulus's recovery could overwrite in failed-sqs/ (listed at the end)\n", output.Plural(len(res.LeftOut), "object"))
	}
	if opts.DryRun {
		fmt.Fprintln(f.IO.ErrOut, "dry run: nothing was staged, Cumulus was not asked")
		// The result says what the run would leave out (exit 3, as the
		// run itself).
		return viaAPIFinish(opts, res)
	}
	if len(res.LeftOut) == plan.Objects {
		fmt.Fprintln(f.IO.ErrOut, "nothing staged: every object was left out")
		return viaAPIFinish(opts, res)
	}
	if !opts.Yes {
		ok, err := cmdutil.Confirm(f.IO, fmt.Sprintf("Recover %s through the Cumulus API at %s?", output.Plural(plan.Objects, "object"), opts.ViaAPI), "yes")
		if err != nil || !ok {
			fmt.Fprintln(f.IO.ErrOut, "nothing staged")
			return err
		}
	}
	v.staging = newStaging(scope.Layout, f.Now())
	res.Staging = v.staging
	// Recorded before the first object moves, so that a run killed while
	// staging leaves a folder every verb warns about (warnStaging).
	if err := writeManifest(ctx, store, StagingManifest{Type: "recover_staging", Staging: v.staging, API: opts.ViaAPI,
		Archive: loc.String(), Created: f.Now().UTC(), Selected: plan.Objects - len(res.LeftOut)}); err != nil {
		return err
	}
	defer dropManifest(context.WithoutCancel(ctx), store, v.staging)
	fmt.Fprintf(f.IO.ErrOut, "staging into %s; if this run is stopped, move what is there back with: dla recover --archive %s --via-api %s --cleanup-staging %s\n",
		output.Escape(v.staging), output.Escape(loc.String()), output.Escape(opts.ViaAPI), output.Escape(v.staging))
	keys := func(yield func(string) error) error {
		return plan.Spool.Keys(func(k string) error {
			if leftOut[k] {
				return nil
			}
			return yield(k)
		})
	}
	if res.Staged, err = v.stage(ctx, keys, plan.Objects-len(res.LeftOut)); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "staged %s in %s\n", output.Plural(res.Staged, "object"), output.Escape(v.staging))
	if err := v.run(ctx, res); err != nil {
		return err
	}
	if res.Left, err = v.leftovers(ctx); err != nil {
		return err
	}
	if opts.Cleanup && len(res.Left) > 0 {
		back, left, err := v.unstage(ctx)
		res.MovedBack, res.Left = back, left
		if err != nil {
			return err
		}
	}
	return viaAPIFinish(opts, res)
}

// viaAPIFinish prints the summary and turns the outcome into the exit code:
// 0 when Cumulus recovered everything, 3 when objects failed or are still
// in staging, 1 when the operation failed.
func viaAPIFinish(opts *RecoverOptions, res *ViaAPIResult) error {
	f := opts.Factory
	if res.Left == nil {
		res.Left = []string{}
	}
	if res.LeftOut == nil {
		res.LeftOut = []LeftOut{}
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
	viaAPILeftOut(opts, res)
	if len(res.Left) > 0 {
		fmt.Fprintf(w, "left in staging (%s):\n", output.Escape(res.Staging))
		for _, k := range res.Left {
			fmt.Fprintf(w, "  %s\n", output.Escape(k))
		}
		fmt.Fprintf(w, "move them back with: dla recover --archive %s --via-api %s --cleanup-staging %s\n",
			output.Escape(opts.Select.value), output.Escape(opts.ViaAPI), output.Escape(res.Staging))
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
// them here, where a failure's move never replaces an object.
func viaAPILeftOut(opts *RecoverOptions, res *ViaAPIResult) {
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
		fmt.Fprintf(w, "  %s -> %s: %s\n", oneLine(l.Key), oneLine(dst), oneLine(l.Reason))
	}
	fmt.Fprintf(w, "recover them here instead (a failure goes to the next free name, never over another object):\n"+
		"  dla recover --archive %s --database-url URL KEY...   (or the keys one per line on stdin: -)\n", output.Escape(opts.Select.value))
}
