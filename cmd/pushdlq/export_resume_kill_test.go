package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// An export --delete reading on past the in-flight limit, SIGKILLed in its
// second round after that round's lines were synced to FILE.partial and
// before they were deleted (or with a delete that reached SQS unanswered),
// is finished by following the printed advice exactly: the same export
// run again is refused (exit 2) and prints a command; that command, run as
// printed through bash (a file name with a space, quotes and a command
// substitution; the endpoint given as a flag), exits 0, and then every
// message is in exactly one place: FILE once, none in the DLQ, none in
// both, FILE.partial gone. Before, the refusal advised another --out,
// which put the messages not yet deleted in both files.
func TestKilledExportDeleteIsFinishedByTheCommandItsRefusalPrints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		nth     int
		reached bool
	}{
		{"after the round was written, before its delete", 1, false},
		{"a delete reached SQS unanswered", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := seededWorld(t, 90)
			url, stuck := w.roundsProxy("DeleteMessageBatch", tc.nth, tc.reached)
			dir := t.TempDir()
			file := filepath.Join(dir, `drained $(touch pwned) it's.ndjson`)
			args := []string{"export", "--dlq", w.dlq, "--out", file, "--delete", "--yes", "--visibility-timeout", "3s", "--endpoint-url", url}
			proc := testsupport.StartProc(t, w.command(t.TempDir(), args...))
			proc.KillWhen(t, 60*time.Second, "the export never reached its second round's delete", stuck)
			if !strings.Contains(proc.Stderr.String(), "round 2: ") {
				t.Fatalf("killed before reading on:\n%s", proc.Stderr.String())
			}
			partial := testsupport.ReadLines(t, file+".partial")

			// The operator runs the export again, and is told what to run.
			lim := testsupport.NewInFlightLimitProxy(t, w.endpoint, 25)
			again := []string{"export", "--dlq", w.dlq, "--out", file, "--delete", "--yes", "--visibility-timeout", "3s", "--endpoint-url", lim.URL}
			_, stderr, code := w.run(nil, "", again...)
			m := regexp.MustCompile(`(?m)^  (pushdlq export .*)$`).FindStringSubmatch(stderr)
			if code != 2 || m == nil {
				t.Fatalf("the export again: exit %d, want 2 and a command that finishes the killed one:\n%s", code, stderr)
			}
			if got := testsupport.ReadLines(t, file+".partial"); len(got) != len(partial) {
				t.Fatalf("the refused export changed the partial file: %d lines, were %d", len(got), len(partial))
			}

			// ... and runs it as printed.
			cwd := t.TempDir()
			cmd := exec.Command("bash", "-c", m[1])
			cmd.Dir = cwd
			cmd.Env = append(w.env(), "TMPDIR="+t.TempDir(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s\n%s", m[1], err, out.String(), errOut.String())
			}
			t.Logf("%s\n%s%s", m[1], out.String(), errOut.String())
			for _, d := range []string{cwd, dir} {
				if _, err := os.Stat(filepath.Join(d, "pwned")); err == nil {
					t.Errorf("the printed command ran the file name's command substitution: %s", m[1])
				}
			}
			if _, err := os.Stat(file + ".partial"); !os.IsNotExist(err) {
				t.Errorf("%s.partial is left after the resume: %v", file, err)
			}

			// Census: each message in exactly one place.
			places := w.places()
			testsupport.ExportFileCensus(t, file, places)
			inPartial := map[string]bool{}
			for _, l := range partial {
				inPartial[gjson.Get(l, "body").Str] = true
			}
			for _, b := range w.bodies {
				if at := places[b]; len(at) != 1 || at[0] != "file" {
					t.Errorf("%s (in the killed run's partial file: %v) is in %v, want in the file once", b, inPartial[b], at)
				}
			}
			if len(places) != len(w.bodies) {
				t.Errorf("%d distinct bodies in the DLQ and the file, %d seeded", len(places), len(w.bodies))
			}
		})
	}
}
