package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakelambda"
)

// The tests of this file run each verb as an operator does, on a terminal
// (a pseudo-terminal of 80, 120 and 200 columns, TERM=xterm-256color),
// against a DLQ on the test SQS server, and check what the terminal shows:
// no escape sequence printed as text, no line wider than the terminal
// unless it is a command to copy (or holds a queue URL that cannot be cut),
// colour where it belongs and none with NO_COLOR=1, TERM=dumb or on the
// data of a pipe (issue 31 item 2).

// ptyEnv is the environment of a run against a test world: the test SQS
// server for every request, test credentials, a state folder of its own.
func (w *world) ptyEnv(extra ...string) []string {
	return append([]string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=testtesttest", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"XDG_STATE_HOME=" + w.stateDir, "AWS_ENDPOINT_URL=" + w.endpoint}, extra...)
}

var confirmYes = []testsupport.PTYAnswer{{Prompt: "to continue:", Reply: "yes"}}

func pushdlqVerbs(t *testing.T) []testsupport.PTYVerb {
	// A verb that only reads has a world of its own for all its runs (two
	// verbs reading one DLQ at once would hide messages from each other);
	// one that moves messages has a new one for each run.
	w := newWorld(t)
	env := w.ptyEnv()
	ws := make([]*world, 5)
	for i := range ws {
		ws[i] = seededWorld(t, 40)
	}
	fixed := func(args ...string) func(*testing.T) ([]string, []testsupport.PTYAnswer) {
		return func(*testing.T) ([]string, []testsupport.PTYAnswer) { return args, nil }
	}
	// A run's own world; its environment is the shared one's but for the
	// state folder, which only replay's journal uses.
	own := func(t *testing.T) *world { return seededWorld(t, 40) }
	triage := []string{"triage", "--dlq", ws[2].dlq, "--queue-base-url", ws[2].base}
	lambda := processorLambda(t, ws[4])
	return []testsupport.PTYVerb{
		{Name: "inspect", Run: fixed("inspect", "--dlq", ws[0].dlq), Env: env, Codes: []int{0}},
		{Name: "inspect-all", Run: fixed("inspect", "--dlq", ws[1].dlq, "--all"), Env: env, Codes: []int{0}},
		{Name: "triage", Run: fixed(triage...), Env: env, Codes: []int{0}, Colour: true, Check: func(t *testing.T, r testsupport.PTYResult) {
			checkTriageScreen(t, ws[2], triage, r)
		}},
		{Name: "trace", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			w := own(t) // trace receives every message: a DLQ of its own
			return []string{"trace", "--dlq", w.dlq, "--queue-base-url", w.base, "--notification", "n-" + w.tag + "1"}, nil
		}, Env: env, Codes: []int{0}, Check: func(t *testing.T, r testsupport.PTYResult) {
			if !strings.Contains(r.Screen, "1 message of 40 read belongs to notification n-") || !strings.Contains(r.Screen, "replayed 0 times before") || !strings.Contains(r.Screen, "pushdlq replay --dlq ") {
				t.Errorf("%d columns: trace's screen lacks the message or the replay", r.Cols)
			}
		}},
		{Name: "replay-dry-run", Run: fixed(ws[3].replayArgs("--dry-run")...), Env: env, Codes: []int{0}},
		{Name: "replay", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			return own(t).replayArgs(), confirmYes
		}, Env: env, Codes: []int{0}, Check: func(t *testing.T, r testsupport.PTYResult) {
			for _, want := range []string{"Type \"yes\" to continue", "sent"} { // the plan, then the run and its summary
				if !strings.Contains(r.Screen, want) {
					t.Errorf("replay's screen lacks %q", want)
				}
			}
		}},
		{Name: "export", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			return []string{"export", "--dlq", own(t).dlq, "--out", filepath.Join(shortTempDir(t), "dlq.ndjson"), "--delete"}, confirmYes
		}, Env: env, Codes: []int{0}},
		{Name: "processor-status", Run: fixed("processor", "status", "--function", fnName), Env: append(env, "AWS_ENDPOINT_URL_LAMBDA="+lambda), Codes: []int{0}},
	}
}

// shortTempDir is a temporary folder with a path as short as an
// operator's (t.TempDir's, named after the test, takes 50 columns of the
// confirmation that names the file).
func shortTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "pty")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

const fnName = "my-push-dlq"

// processorLambda is a fake Lambda endpoint holding the push-dlq function
// of the world's queues, with one disabled mapping.
func processorLambda(t *testing.T, w *world) string {
	fake := fakelambda.New(t)
	fake.AddFunction(fakelambda.Function{Name: fnName, Env: map[string]string{
		pushpolicy.EnvDLQURL: w.dlq, pushpolicy.EnvBaseURL: w.base,
		pushpolicy.EnvStartAt: winStart, pushpolicy.EnvEndAt: winEnd, pushpolicy.EnvErrorCodes: "1004,2003",
	}})
	fake.AddMapping(fakelambda.Mapping{UUID: "map-1", Function: fnName, EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:push-dlq", State: "Disabled", BatchSize: 10})
	return fake.URL
}

// checkTriageScreen pins issue 31's bar for triage on a terminal: each
// group's next command (as -o json gives it) on a line of its own, whole.
func checkTriageScreen(t *testing.T, w *world, args []string, r testsupport.PTYResult) {
	t.Helper()
	out, stderr, code := w.run(nil, "", append(args, "-o", "json")...)
	var report struct {
		Groups []struct {
			Code    any    `json:"code"`
			Class   string `json:"class"`
			Command string `json:"command"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || len(report.Groups) == 0 {
		t.Fatalf("triage -o json: exit %d, %v: %s", code, err, stderr)
	}
	for _, g := range report.Groups {
		if g.Command != "" && !testsupport.CommandOnItsOwnLine(r.Screen, g.Command) {
			t.Errorf("%d columns: the command of group %v (%s) is not whole on a line of its own: %s", r.Cols, g.Code, g.Class, g.Command)
		}
	}
}

func TestEveryVerbOnATerminal(t *testing.T) {
	for _, v := range pushdlqVerbs(t) {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			testsupport.RunOnTerminals(t, bin, v)
		})
	}
}
