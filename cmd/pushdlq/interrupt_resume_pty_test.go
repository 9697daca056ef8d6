package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// replayingStatus is replay's progress line.
var replayingStatus = regexp.MustCompile(`replaying: \d+ of \d+ done`)

// TestReplayInterruptedOnATerminalIsResumedByTheCommandItPrints pins
// issue 38 items 3 and 5: a replay interrupted by Ctrl-C on a terminal of
// 80 and 200 columns ends with the command that resumes it, on a line of
// its own, and no progress line left glued to another; that command, run
// through bash as printed, finishes the run.
func TestReplayInterruptedOnATerminalIsResumedByTheCommandItPrints(t *testing.T) {
	for _, cols := range []int{80, 200} {
		w := seededWorld(t, 40)
		env := w.ptyEnv()
		// Slow enough that Ctrl-C, typed once the progress shows, comes
		// while most messages are still to send.
		r := testsupport.RunPTY(t, bin, testsupport.PTY{Cols: cols, Env: env, Answers: []testsupport.PTYAnswer{
			{Prompt: "to continue:", Reply: "yes"}, {Prompt: "replaying: ", Reply: "\x03", Keys: true},
		}}, w.replayArgs("--rate", "2", "--concurrency", "1")...)
		screen := testsupport.Render(r.Screen, cols)
		if r.Code != 130 {
			t.Fatalf("%d columns: exit %d, want 130:\n%s", cols, r.Code, screen)
		}
		if glued := testsupport.GluedToStatus(screen, replayingStatus); len(glued) > 0 {
			t.Errorf("%d columns: progress glued to a line: %q\n%s", cols, glued, screen)
		}
		if replayingStatus.MatchString(screen.String()) {
			t.Errorf("%d columns: the progress line was left on the screen:\n%s", cols, screen)
		}
		// The command as printed (the screen wraps it at the terminal's edge).
		m := regexp.MustCompile(`(?m)^  (pushdlq replay .* --resume \S+)$`).FindStringSubmatch(r.Screen)
		if m == nil || !strings.Contains(screen.String(), "pushdlq: interrupted") {
			t.Fatalf("%d columns: no resume command after the interrupt:\n%s", cols, screen)
		}
		t.Logf("%d columns, interrupted:\n%s", cols, screen)

		// The operator runs it as printed, on the same terminal.
		env = append(env, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		again := testsupport.RunPTY(t, "/bin/bash", testsupport.PTY{Cols: cols, Env: env, Answers: confirmYes}, "-c", m[1])
		resumed := testsupport.Render(again.Screen, cols)
		if again.Code != 0 {
			t.Fatalf("%d columns: %s: exit %d:\n%s", cols, m[1], again.Code, resumed)
		}
		if glued := testsupport.GluedToStatus(resumed, replayingStatus); len(glued) > 0 {
			t.Errorf("%d columns: progress glued to a line on the resume: %q\n%s", cols, glued, resumed)
		}
		t.Logf("%d columns, resumed:\n%s", cols, resumed)
		places := w.places(1, 2)
		w.exactlyOnce(places, eligible, nil)
	}
}

// TestReplayAnsweredYIsNotConfirmed pins issue 38 item 6: only "yes"
// confirms; "y" is said to be no confirmation, nothing is sent, and the
// exit is 1 (nothing done), not 0.
func TestReplayAnsweredYIsNotConfirmed(t *testing.T) {
	w := seededWorld(t, 16)
	r := testsupport.RunPTY(t, bin, testsupport.PTY{Cols: 80, Env: w.ptyEnv(), Answers: []testsupport.PTYAnswer{{Prompt: "to continue:", Reply: "y"}}},
		w.replayArgs()...)
	screen := testsupport.Render(r.Screen, 80).String()
	if r.Code != 1 || !strings.Contains(screen, "not confirmed (type yes)\nnothing sent, nothing changed; every message is released") {
		t.Fatalf("exit %d, want 1 saying it was not confirmed:\n%s", r.Code, screen)
	}
	places := w.places(1, 2)
	for body, at := range places {
		if len(at) != 1 || at[0] != "DLQ" {
			t.Errorf("%s is in %v after a replay not confirmed", body, at)
		}
	}
}
