package dla

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusapi"
	"github.com/deadletter/deadletter/internal/dla"
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

// run starts Cumulus's recovery of the staging folder and waits for it.
func (v *viaAPI) run(ctx context.Context, res *ViaAPIResult) error {
	op, err := v.client.RecoverCumulusMessages(ctx, v.bucket, v.staging)
	if err != nil {
		back, left, _ := v.unstage(context.WithoutCancel(ctx))
		return fmt.Errorf("%w; nothing was recovered, and %d staged objects were moved back (%d left in %s)", err, back, len(left), v.staging)
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
			fmt.Fprintf(v.f.IO.ErrOut, "dla: stopped watching; the operation goes on in Cumulus (GET /asyncOperations/%s).\n"+
				"     When it ends, move what it left back with: dla recover --archive s3://%s/%s --via-api %s --cleanup-staging %s\n",
				output.Escape(op.ID), v.bucket, strings.TrimSuffix(v.layout.Stack, "/"), v.client.BaseURL, output.Escape(v.staging))
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, v.pollMax)
		if op, err = v.client.AsyncOperation(ctx, res.OperationID); err != nil {
			v.progress.Clear()
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
