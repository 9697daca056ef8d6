package pushdlqcmd

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// targetsUnchecked is why target queues of a plan could not be checked
// (whether they exist is not known): an endpoint that cannot be reached,
// no credentials, access denied. Each reason is one line
// (awsconfig.Explain, through cmdutil.ErrorLine), without the SDK's
// operation chain or the queue (its row names it); shared is the reason
// when every such queue has the same one, as an endpoint or credentials
// failure gives, so that it is said once.
type targetsUnchecked struct {
	queues  []string          // sorted
	reasons map[string]string // by queue
	shared  string
	auth    bool // credentials or permission: exit 4
}

// uncheckedTargets is nil when every target queue of the plan was
// checked (found, or missing).
func uncheckedTargets(p *pushreplay.Plan) *targetsUnchecked {
	u := &targetsUnchecked{reasons: map[string]string{}}
	note := func(queue string, err error) {
		u.queues = append(u.queues, queue)
		u.reasons[queue] = checkReason(err)
		u.auth = u.auth || cmdutil.IsAuthError(err)
	}
	if p.Unchecked != nil { // no client: none was checked
		for k := range p.ByTarget {
			if _, seen := u.reasons[k.Target]; !seen {
				note(k.Target, p.Unchecked)
			}
		}
	}
	for queue, c := range p.Targets {
		if _, seen := u.reasons[queue]; !seen && !c.Missing && c.Err != nil {
			note(queue, c.Err)
		}
	}
	if len(u.queues) == 0 {
		return nil
	}
	sort.Strings(u.queues)
	u.shared = u.reasons[u.queues[0]]
	for _, q := range u.queues {
		if u.reasons[q] != u.shared {
			u.shared = ""
		}
	}
	return u
}

// reason is why queue was not checked; ok is false when it was.
func (u *targetsUnchecked) reason(queue string) (string, bool) {
	if u == nil {
		return "", false
	}
	r, ok := u.reasons[queue]
	return r, ok
}

// dryRunError is a dry run's failure to check its plan: one line, exit 4
// for credentials or permission, else 1.
func (u *targetsUnchecked) dryRunError() error {
	code := cmdutil.ExitFailure
	if u.auth {
		code = cmdutil.ExitAuth
	}
	names := make([]string, len(u.queues))
	for i, q := range u.queues {
		names[i] = sqsmove.Name(q)
	}
	what := "the target queue " + names[0]
	if len(names) > 1 {
		what = "the target queues " + strings.Join(names, ", ")
	}
	line := fmt.Sprintf("dry run: could not check %s: %s", what, u.shared)
	if u.shared == "" {
		line = fmt.Sprintf("dry run: could not check %s (the plan says why for each)", what)
	}
	return &cmdutil.ExitError{Code: code, Err: errors.New(line)}
}

// checkReason is an error of a target queue's check in one line: the
// common AWS failures explained (cmdutil.ErrorLine), less what was wrapped
// around the SDK's error (the queue, which the plan's row names).
func checkReason(err error) string {
	line := cmdutil.ErrorLine(err)
	if line == err.Error() {
		return pushreplay.ErrorReason(err) // not a failure ErrorLine knows
	}
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		if prefix, ok := strings.CutSuffix(err.Error(), oe.Error()); ok {
			line = strings.TrimPrefix(line, prefix)
		}
	}
	return line
}
