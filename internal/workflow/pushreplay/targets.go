package pushreplay

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/aws/smithy-go"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// ErrorReason is an AWS error in one line: its code and message (the
// queue does not exist, access denied), or the error itself.
func ErrorReason(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := strings.TrimPrefix(ae.ErrorCode(), "AWS.SimpleQueueService.")
		if msg := ae.ErrorMessage(); msg != "" {
			return code + ": " + msg
		}
		return code
	}
	var ee *sqsmove.EntryError
	if errors.As(err, &ee) {
		return ee.Error()
	}
	return err.Error()
}

// isMissingQueue reports an error that says the queue does not exist.
func isMissingQueue(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	code := ae.ErrorCode()
	return strings.Contains(code, "NonExistentQueue") || strings.Contains(code, "QueueDoesNotExist")
}

// TargetCheck is what reading a target queue's attributes said.
type TargetCheck struct {
	Missing bool  // the queue does not exist
	Err     error // why it could not be read (missing, or e.g. access denied)
}

// checkTargets reads the attributes of every target queue of the plan,
// so that the plan (and a dry run) says which ones do not exist. The
// queues are read at once (a plan has a few), not one after another.
func checkTargets(ctx context.Context, api sqsmove.API, targets []string) map[string]TargetCheck {
	out := map[string]TargetCheck{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := sqsmove.Describe(ctx, api, t); err != nil {
				mu.Lock()
				out[t] = TargetCheck{Missing: isMissingQueue(err), Err: err}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// failureTally groups the messages a replay could not move by target and
// reason, for the summary.
type failureTally map[[2]string]int

// TargetFailure is one row of the summary's failures: how many messages
// to one target failed, and why.
type TargetFailure struct {
	Target string `json:"target"`
	Count  int    `json:"count"`
	Reason string `json:"reason"`
}

func (f failureTally) add(target string, err error) { f[[2]string{target, ErrorReason(err)}]++ }

func (f failureTally) rows() []TargetFailure {
	out := make([]TargetFailure, 0, len(f))
	for k, n := range f {
		out = append(out, TargetFailure{Target: k[0], Count: n, Reason: k[1]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Target != out[j].Target {
			return out[i].Target < out[j].Target
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}
