package dlacmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

// sampleModTime is the modification time the sample archive's files are
// given before the tests run: a legacy object without an event time is
// dated by its last change, and a checkout's mtime would put that date in
// the golden files.
var sampleModTime = time.Date(2024, 3, 6, 12, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	err := filepath.WalkDir(sampleArchive, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, sampleModTime, sampleModTime)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "pinning the sample archive's modification times:", err)
		os.Exit(1)
	}
	code := m.Run()
	testsupport.RemoveBinaries()
	os.Exit(code)
}

const sampleArchive = "../../../testdata/archive/demo"

type runResult struct {
	code        int
	stdout      string
	stderr      string
	stdoutBytes []byte
}

// run executes dla in-process with the given terminal state and env, at a
// fixed time.
func run(t testing.TB, tty bool, env map[string]string, stdin string, args ...string) runResult {
	t.Helper()
	return runWith(t, tty, func() time.Time { return time.Date(2024, 3, 3, 12, 0, 0, 0, time.UTC) }, env, stdin, args...)
}

// runAt executes dla without a terminal, with its clock.
func runAt(t testing.TB, now func() time.Time, env map[string]string, stdin string, args ...string) runResult {
	t.Helper()
	return runWith(t, false, now, env, stdin, args...)
}

func runWith(t testing.TB, tty bool, now func() time.Time, env map[string]string, stdin string, args ...string) runResult {
	t.Helper()
	return runContext(t, context.Background(), tty, now, env, stdin, args...)
}

// runContext is runWith on ctx: cancelling it is an interrupt (Ctrl-C).
func runContext(t testing.TB, ctx context.Context, tty bool, now func() time.Time, env map[string]string, stdin string, args ...string) runResult {
	t.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	ios.SetTTY(tty, tty, tty)
	getenv := func(k string) string { return env[k] }
	ios.SetEnv(getenv)
	f := NewFactory(ios, getenv)
	f.Now = now
	code := Run(ctx, f, args)
	return runResult{code: code, stdout: out.String(), stderr: errOut.String(), stdoutBytes: out.Bytes()}
}

func TestSearchGolden(t *testing.T) {
	args := []string{"search", "--archive", sampleArchive, "--date", "2024-03-02"}
	for _, c := range []struct {
		name  string
		tty   bool
		env   map[string]string
		extra []string
	}{
		{"search_table_tty", true, nil, nil},
		{"search_table_tty_nocolor", true, map[string]string{"NO_COLOR": "1"}, nil},
		{"search_table_piped", false, nil, nil},
		{"search_json", false, nil, []string{"-o", "json"}},
		{"search_ndjson", false, nil, []string{"-o", "ndjson"}},
		{"search_keys", false, nil, []string{"-o", "keys"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, c.tty, c.env, "", append(args, c.extra...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			golden.Check(t, filepath.Join("testdata", c.name+".golden"), r.stdout)
			hasANSI := strings.Contains(r.stdout, "\x1b[")
			if wantANSI := c.tty && c.env == nil; hasANSI != wantANSI {
				t.Errorf("ANSI escapes in stdout: %v, want %v", hasANSI, wantANSI)
			}
		})
	}
}

func TestShowGolden(t *testing.T) {
	key := "sqs/2024-03-02/fc11c688-08b0-490f-a8c2-27af55e963d9-2c06e409-dae1-489b-84eb-e698da28bb8e"
	for _, c := range []struct {
		name string
		tty  bool
		args []string
	}{
		{"show_text_piped", false, nil},
		{"show_text_tty", true, nil},
		{"show_json", false, []string{"-o", "json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, c.tty, nil, "", append([]string{"show", "--archive", sampleArchive, key}, c.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			golden.Check(t, filepath.Join("testdata", c.name+".golden"), r.stdout)
		})
	}
}

func TestStatsGolden(t *testing.T) {
	for _, by := range statsDimensions {
		t.Run(by, func(t *testing.T) {
			r := run(t, false, nil, "", "stats", "--archive", sampleArchive, "--by", by, "-o", "json", "--include-legacy")
			if r.code != cmdutil.ExitPartial { // the sample holds malformed objects
				t.Fatalf("exit %d, want 3: %s", r.code, r.stderr)
			}
			golden.Check(t, filepath.Join("testdata", "stats_"+by+".golden"), r.stdout)
		})
	}
}

func TestUnreadableObjectsAreReported(t *testing.T) {
	r := run(t, false, nil, "", "search", "--archive", sampleArchive, "-o", "keys")
	if r.code != cmdutil.ExitPartial {
		t.Fatalf("exit %d, want 3", r.code)
	}
	if !strings.Contains(r.stderr, "dla: unreadable demo/dead-letter-archive/sqs/2024-03-03/e49d04ff") ||
		!strings.Contains(r.stderr, "object is not valid JSON: empty") || !strings.Contains(r.stderr, "2 unreadable") {
		t.Errorf("stderr does not name the objects and reasons:\n%s", r.stderr)
	}
	r = run(t, false, nil, "", "search", "--archive", sampleArchive, "-o", "keys", "--ignore-unreadable")
	if r.code != 0 || !strings.Contains(r.stderr, "2 unreadable") {
		t.Errorf("--ignore-unreadable: exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestSearchKeysPipeIntoShow(t *testing.T) {
	keys := run(t, false, nil, "", "search", "--archive", sampleArchive, "--date", "2024-03-01", "--status", "failed", "-o", "keys")
	if keys.code != 0 || strings.Count(keys.stdout, "\n") < 2 {
		t.Fatalf("search: exit %d, %q", keys.code, keys.stdout)
	}
	show := run(t, false, nil, keys.stdout, "show", "--archive", sampleArchive, "-o", "json", "-")
	var docs []showDoc
	if err := json.Unmarshal(show.stdoutBytes, &docs); err != nil || show.code != 0 {
		t.Fatalf("show -: exit %d, %v, stderr %s", show.code, err, show.stderr)
	}
	if len(docs) != strings.Count(keys.stdout, "\n") || docs[0].Record == nil || *docs[0].Record.Status != "FAILED" {
		t.Fatalf("show - gave %d documents for %d keys", len(docs), strings.Count(keys.stdout, "\n"))
	}
}

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"search"}, "no archive given"},
		{[]string{"search", "--archive", sampleArchive, "--date", "2024-02-30"}, "invalid --date"},
		{[]string{"search", "--archive", sampleArchive, "--from", "2024-03-05", "--to", "2024-03-01"}, "is after --to"},
		{[]string{"search", "--archive", sampleArchive, "--date", "today", "--from", "2024-03-01"}, "cannot be combined"},
		{[]string{"search", "--archive", sampleArchive, "--status", "DONE"}, "invalid --status"},
		{[]string{"search", "--archive", sampleArchive, "--error", "("}, "invalid --error"},
		{[]string{"search", "--archive", sampleArchive, "-o", "yaml"}, "invalid --output"},
		{[]string{"search", "--archive", sampleArchive, "--nope"}, "unknown flag"},
		{[]string{"search", "--archive", "/nonexistent/archive"}, "no such file"},
		{[]string{"search", "--archive", "gs://bucket/stack"}, "only s3://"},
		{[]string{"stats", "--archive", sampleArchive, "--by", "color"}, "invalid --by"},
		{[]string{"show", "--archive", sampleArchive}, "show needs an archive key"},
		{[]string{"frobnicate"}, "unknown command"},
	} {
		r := run(t, false, nil, "", c.args...)
		if r.code != cmdutil.ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

func TestArchiveFromEnvAndHelpTopics(t *testing.T) {
	r := run(t, false, map[string]string{"DLA_ARCHIVE": sampleArchive}, "", "search", "--date", "2024-03-02", "-o", "keys")
	if r.code != 0 || strings.Count(r.stdout, "\n") == 0 {
		t.Errorf("DLA_ARCHIVE: exit %d %s", r.code, r.stderr)
	}
	r = run(t, false, nil, "", "help", "exit-codes")
	if r.code != 0 || !strings.Contains(r.stdout, "130  interrupted") {
		t.Errorf("help exit-codes: %q", r.stdout)
	}
	r = run(t, false, nil, "", "version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "dla version ") {
		t.Errorf("version: %q", r.stdout)
	}
}

func TestShowUnreadableStillShowsWhatItCan(t *testing.T) {
	key := "sqs/2024-03-04/ed9fb8e8-9017-4a91-a226-07b6dfd13afe-a34caf5c-f375-4937-a87d-958a71cb1d2c"
	r := run(t, false, nil, "", "show", "--archive", sampleArchive, key, "sqs/2024-03-04/missing")
	if r.code != cmdutil.ExitPartial {
		t.Fatalf("exit %d", r.code)
	}
	if !strings.Contains(r.stdout, "unreadable: layer 1 body is not valid JSON") || !strings.Contains(r.stdout, "message id") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "sqs/2024-03-04/missing: no such key") {
		t.Errorf("stderr: %s", r.stderr)
	}
	if bytes.Contains(r.stdoutBytes, []byte("\x1b[")) {
		t.Error("piped show has ANSI escapes")
	}
}

func TestInterruptedRunExits130(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	f := NewFactory(ios, func(string) string { return "" })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as if Ctrl-C arrived at once
	if code := Run(ctx, f, []string{"search", "--archive", sampleArchive}); code != cmdutil.ExitInterrupted {
		t.Fatalf("exit %d, want 130 (stderr %q)", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "interrupted") {
		t.Errorf("stderr %q", errOut.String())
	}
}

// Issue 38 item 9: --date 2024-02-30 got "want YYYY-MM-DD", though its
// format is right: the error now says the day does not exist (exit 2).
func TestDateThatIsNoDayIsNamedAsSuch(t *testing.T) {
	for flag, want := range map[string]string{
		"--date": "invalid --date: 2024-02-30 is not a day (February 2024 has 29 days)",
		"--from": "invalid --from: 2024-02-30 is not a day (February 2024 has 29 days)",
	} {
		r := run(t, false, nil, "", "search", "--archive", sampleArchive, flag, "2024-02-30")
		if r.code != 2 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "want YYYY-MM-DD") {
			t.Errorf("%s 2024-02-30: exit %d: %s", flag, r.code, r.stderr)
		}
	}
	if r := run(t, false, nil, "", "search", "--archive", sampleArchive, "--date", "2024-2-3"); r.code != 2 || !strings.Contains(r.stderr, "want YYYY-MM-DD") {
		t.Errorf("--date 2024-2-3: exit %d: %s", r.code, r.stderr)
	}
}
