// Package apirecover is dla recover --via-api below the CLI: where Cumulus
// would copy each failure and which objects would clash there, the staging
// folder and the way back, and the Cumulus operation watched to its end.
package apirecover

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
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

// Result is the summary of a recovery through the Cumulus API.
type Result struct {
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
	// SucceededKeys and FailedKeys are the staged keys Cumulus's
	// operation reports written and failed (for the audit record).
	SucceededKeys []string `json:"-"`
	FailedKeys    []string `json:"-"`
}

// LeftOut is an object --via-api did not stage.
type LeftOut struct {
	Key string `json:"key"`
	// Destination is where Cumulus would copy it if it failed.
	Destination string `json:"destination"`
	Reason      string `json:"reason"`
}

// CumulusTime is the time Cumulus's getDLAFailureKey dates a failure by:
// the "time" at the top of the object it parsed (the last one, as
// JSON.parse keeps), whatever the object's generation; a Null result
// without one. (dla's own Time falls back to the event's, which Cumulus
// does not.)
func CumulusTime(d *dla.Decoded) gjson.Result {
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
	LeftOutUnreadable = "dla cannot read it, so where Cumulus would copy it cannot be told (Cumulus skips what it cannot parse, and copies the rest)"
	LeftOutTime       = "its time is one dla cannot date as Cumulus would, so where Cumulus would copy it cannot be told"
	LeftOutPercent    = "its key holds '%': Cumulus sends the copy source unencoded, and S3 would copy the object of the decoded key instead"
)

// Clashes finds the objects Cumulus's recovery could lose: two objects of
// the selection whose failures it would copy to the same failed-sqs/ key
// (the date of their time and their file name), or one whose key there is
// taken already. Cumulus's CopyObject replaces the object at the
// destination, so the second failure would overwrite the first. The first
// object of each name goes to Cumulus; the others are left where they are.
// byFailed is the selection's keys by that destination, in selection
// order.
func (v *Run) Clashes(ctx context.Context, byFailed map[string][]string) ([]LeftOut, error) {
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
		err := v.Store.List(ctx, folder, true, func(e archive.Entry) error {
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

// Run is one recovery through Cumulus: the staging folder, the operation
// and the way back.
type Run struct {
	Store   archive.Store
	Layout  dla.Layout
	Bucket  string
	Client  *cumulusapi.Client
	Staging string
	// PollMin and PollMax bound the waits between polls (2 s to 30 s).
	PollMin, PollMax time.Duration
	// CleanupCommand is the command that moves back what is in a staging
	// folder, as the operator is to run it: the caller builds it from its
	// own invocation (archive, AWS flags) and quotes it for the shell. Nil:
	// no command is printed, only the folder.
	CleanupCommand func(staging string) string
	// Logf writes one line for the operator (stderr; the caller escapes
	// what it prints); Progress updates the progress line and Clear
	// clears it.
	Logf     func(format string, args ...any)
	Progress func(format string, args ...any)
	Clear    func()
	// Moved, when set, is told of each object moved into staging (from
	// its key to the staged one) and back out (from the staged key), once
	// the move is done: the audit record's items.
	Moved func(from, to string)
}

func (v *Run) moved(from, to string) {
	if v.Moved != nil {
		v.Moved(from, to)
	}
}

// NewStaging names a run's staging folder: its time and a random suffix.
func NewStaging(layout dla.Layout, now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return layout.Root() + StagingFolder + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:]) + "/"
}

// StagedKey is where key goes in staging, and originalKey the way back.
func (v *Run) StagedKey(key string) string {
	return v.Staging + strings.TrimPrefix(key, v.Layout.Root())
}

func (v *Run) OriginalKey(staged string) string {
	return v.Layout.Root() + strings.TrimPrefix(staged, v.Staging)
}

// Stage moves every key into the staging folder (copy, read back, delete:
// archive.Move). On an error it moves back what it staged.
func (v *Run) Stage(ctx context.Context, keys func(yield func(string) error) error, total int) (int, error) {
	n := 0
	err := keys(func(key string) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		dst := v.StagedKey(key)
		moved, err := archive.Move(ctx, v.Store, key, dst)
		if errors.Is(err, archive.ErrSourceGone) {
			// Another run took it (its own staging, a recovery): ours is a
			// second copy, and goes; the object is that run's to recover.
			if body, gerr := v.Store.Get(ctx, moved); gerr == nil {
				if derr := archive.DeleteCheckedBody(ctx, v.Store, moved, body); derr == nil {
					v.Logf("dla: %s was taken by another run meanwhile; not staged", key)
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
		v.moved(key, dst)
		v.Progress("staging: %d/%d objects", n, total)
		return nil
	})
	v.Clear()
	if err == nil {
		return n, nil
	}
	back, left, uerr := v.Unstage(context.WithoutCancel(ctx))
	msg := fmt.Sprintf("%v; the %d staged objects were moved back", err, back)
	if uerr != nil || len(left) > 0 {
		msg = fmt.Sprintf("%v; moving the staged objects back: %d moved, %d left in %s (%v); move them back%s", err, back, len(left), v.Staging, uerr, v.cleanupAdvice())
	}
	return n, errors.New(msg)
}

// Hint says that an operation may still be working on the staging folder,
// and how to move back what it leaves.
func (v *Run) Hint(opID string) {
	if opID != "" {
		v.Logf("dla: stopped watching; the operation goes on in Cumulus (GET /asyncOperations/%s).", opID)
	}
	v.Logf("dla: once it ends, move what it left back%s", v.cleanupAdvice())
}

// cleanupAdvice is " with: COMMAND" (CleanupCommand), or the folder and
// the flag when the caller gave no command.
func (v *Run) cleanupAdvice() string {
	if v.CleanupCommand == nil {
		return " from " + v.Staging + " with dla recover --cleanup-staging"
	}
	return " with: " + v.CleanupCommand(v.Staging)
}

// Leftovers lists what is still in the staging folder.
func (v *Run) Leftovers(ctx context.Context) ([]string, error) {
	var keys []string
	err := v.Store.List(ctx, v.Staging, false, func(e archive.Entry) error {
		keys = append(keys, e.Key)
		return nil
	})
	return keys, err
}

// Unstage moves everything left in staging back to its key. An object
// whose key was taken meanwhile goes to the next free name (archive.Move
// never replaces an object) and is named in left.
func (v *Run) Unstage(ctx context.Context) (int, []string, error) {
	keys, err := v.Leftovers(ctx)
	if err != nil {
		return 0, keys, err
	}
	n := 0
	var left []string
	for _, k := range keys {
		orig := v.OriginalKey(k)
		if v.sameAsOriginal(ctx, k, orig) { // a staging move stopped before its delete
			n++
			continue
		}
		moved, err := archive.Move(ctx, v.Store, k, orig)
		switch {
		case err != nil:
			left = append(left, k)
			v.Logf("dla: could not move %s back to %s: %v", k, orig, err)
		case moved != orig:
			n++
			v.moved(k, moved)
			v.Logf("dla: %s was taken; %s went back to %s", orig, k, moved)
		default:
			n++
			v.moved(k, moved)
		}
	}
	return n, left, nil
}

// sameAsOriginal drops a staged copy whose original is still in place with
// the same bytes (a staging move that stopped between its copy and its
// delete): moving it back would make a second object.
func (v *Run) sameAsOriginal(ctx context.Context, staged, orig string) bool {
	there, err := v.Store.Get(ctx, orig)
	if err != nil {
		return false
	}
	body, err := v.Store.Get(ctx, staged)
	if err != nil || !bytes.Equal(body, there) {
		return false
	}
	return archive.DeleteCheckedBody(ctx, v.Store, staged, body) == nil
}

// StartAndWait starts Cumulus's recovery of the staging folder and waits
// for its async operation to end.
func (v *Run) StartAndWait(ctx context.Context, res *Result) error {
	op, err := v.Client.RecoverCumulusMessages(ctx, v.Bucket, v.Staging)
	if err != nil && cumulusapi.NotStarted(err) {
		back, left, uerr := v.Unstage(context.WithoutCancel(ctx))
		if uerr != nil || len(left) > 0 {
			return fmt.Errorf("%w; nothing was recovered, and %d staged objects were moved back (%d left in %s; move them back%s)", err, back, len(left), v.Staging, v.cleanupAdvice())
		}
		return fmt.Errorf("%w; nothing was recovered, and %d staged objects were moved back (%d left in %s)", err, back, len(left), v.Staging)
	}
	if err != nil { // the request may have reached Cumulus: leave staging to it
		v.Hint("")
		return fmt.Errorf("%w; Cumulus may have started recovering %s all the same, so the staged objects stay there", err, v.Staging)
	}
	res.OperationID = op.ID
	v.Logf("Cumulus async operation %s started on %s", op.ID, v.Staging)
	start := time.Now()
	wait := v.PollMin
	for !op.Done() {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			v.Clear()
			v.Hint(op.ID)
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, v.PollMax)
		if op, err = v.Client.AsyncOperation(ctx, res.OperationID); err != nil {
			v.Clear()
			v.Hint(res.OperationID)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w; the operation may still be running: GET /asyncOperations/%s, staging %s", err, res.OperationID, v.Staging)
		}
		left, _ := v.Leftovers(ctx)
		v.Progress("Cumulus operation %s: %s, %s, %d of %d objects still in staging", op.ID, op.Status, time.Since(start).Round(time.Second), len(left), res.Staged)
	}
	v.Clear()
	res.Status = op.Status
	var out cumulusapi.RecoveryOutput
	if op.Succeeded() && json.Unmarshal([]byte(op.Output), &out) == nil {
		res.Succeeded, res.Failed = len(out.ProcessingSucceededKeys), len(out.ProcessingFailedKeys)
		res.SucceededKeys, res.FailedKeys = out.ProcessingSucceededKeys, out.ProcessingFailedKeys
	}
	if !op.Succeeded() {
		v.Logf("dla: Cumulus operation %s ended %s: %s", op.ID, op.Status, shorten(op.Output))
	}
	return nil
}

// shorten bounds an operation's output in a line (400 bytes).
func shorten(s string) string {
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}
