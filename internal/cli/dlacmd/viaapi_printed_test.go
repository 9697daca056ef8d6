package dlacmd

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakecumulus"
	"github.com/deadletter/deadletter/internal/workflow/apirecover"
)

// The test binary is dla when it is started under that name: the commands
// dla prints are run through bash, by a dla on the PATH (printedEnv).
func init() {
	if filepath.Base(os.Args[0]) == "dla" {
		os.Exit(Main())
	}
}

// hostileStacks are stack names a printed command must carry through the
// shell: a '$', quotes, a backquote, a ';', a glob, a line break.
var hostileStacks = []string{"my $tack", `it's "a" ` + "`x`; *", "two\nlines"}

// endpointTrap is what the environment's AWS endpoint is while the
// commands printed run: nothing listens there, so a command that does not
// carry the invocation's --endpoint-url fails at once (and no SDK ever
// leaves 127.0.0.1).
const endpointTrap = "http://127.0.0.1:1"

// flagEnv is a --via-api archive under stack, reached only through
// --endpoint-url (the environment's endpoint is the trap) and with the
// credentials of a --profile only (none in the environment), and a
// --region.
type flagEnv struct {
	*viaAPIEnv
	stack, archive string
	store          archive.Store
}

func newFlagEnv(t *testing.T, stack string) *flagEnv {
	t.Helper()
	e := &flagEnv{viaAPIEnv: &viaAPIEnv{c: testsupport.S3Client(t)}, stack: stack}
	e.bucket = testsupport.NewBucket(t, e.c)
	e.archive = "s3://" + e.bucket + "/" + stack
	e.store = archive.NewS3(e.c, e.bucket)
	testsupport.UploadTree(t, e.c, e.bucket, sampleArchive, stack+"/")
	e.api = fakecumulus.New(t, testAPIToken, stack, func(bucket string) archive.Store { return archive.NewS3(e.c, bucket) })
	e.api.Written = func(_ string, raw []byte) bool { return !strings.Contains(string(raw), "KnexTimeoutError") }
	e.before = e.snapshot(t)
	config := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(config, []byte("[profile "+testProfile+"]\naws_access_key_id = "+testsupport.AccessKey+
		"\naws_secret_access_key = "+testsupport.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL": endpointTrap, "AWS_ENDPOINT_URL_S3": "", "AWS_MAX_ATTEMPTS": "1",
		"AWS_CONFIG_FILE": config, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""})
	return e
}

// testProfile is the profile flagEnv's shared config holds.
const testProfile = "dla-item8"

// awsFlags are the AWS flags flagEnv's commands are given.
func awsFlags(t *testing.T) []string {
	return []string{"--endpoint-url", testsupport.S3Endpoint(t), "--profile", testProfile, "--region", "us-east-1"}
}

// dla runs dla in-process with the AWS flags (awsFlags) and the token in
// its environment.
func (e *flagEnv) dla(t *testing.T, ctx context.Context, args ...string) runResult {
	t.Helper()
	return runViaAPI(t, ctx, testAPIToken, "", append(args, awsFlags(t)...)...)
}

func (e *flagEnv) staged(t *testing.T) int {
	t.Helper()
	n := 0
	for _, k := range testsupport.ListKeys(t, e.c, e.bucket, "") {
		if strings.Contains(k, "/recover-staging/") && !strings.HasSuffix(k, ".json") {
			n++
		}
	}
	return n
}

// printedCommands are the commands stderr tells the operator to run:
// what follows marker on a line, each exactly once per line.
func printedCommands(stderr, marker string) []string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		if _, c, ok := strings.Cut(line, marker); ok {
			out = append(out, c)
		}
	}
	return out
}

// runPrintedInBash runs a printed command as the operator does: pasted
// into bash, in an environment of its own (no Cumulus token, the AWS
// endpoint the trap), with this test binary as the dla on its PATH, and
// extra variables.
func runPrintedInBash(t *testing.T, command string, extra ...string) (int, string) {
	t.Helper()
	if !strings.HasPrefix(command, "dla ") {
		t.Fatalf("the printed command does not start with dla: %q", command)
	}
	if _, err := shellword.Split(command); err != nil {
		t.Errorf("the printed command is not plain quoted words: %v: %q", err, command)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "dla")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", command)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CUMULUS_API_TOKEN=") && !strings.HasPrefix(kv, "PATH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+bin+":"+os.Getenv("PATH"), "DEADLETTER_NO_PROMPT=1", "AWS_ENDPOINT_URL="+endpointTrap)
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// Every command a --via-api run prints to move its staged objects back
// (the staging line, the summary's "left in staging" and the warning of
// any later verb) runs as printed, pasted into bash, for a stack whose
// name holds shell syntax and an archive reached through --endpoint-url:
// it carries the flag, and moves every staged object back to its key,
// byte for byte; each runs (the first moves everything back, the others
// find nothing left), and all three are one command.
func TestViaAPICleanupCommandsRunAsPrintedForHostileStacksAndFlagEndpoints(t *testing.T) {
	for _, stack := range append([]string{"demo"}, hostileStacks...) {
		t.Run(strings.ReplaceAll(stack, "\n", `\n`), func(t *testing.T) {
			e := newFlagEnv(t, stack)
			e.api.FailOperation = true // Cumulus processes nothing: all stays in staging
			r := e.dla(t, context.Background(), "recover", "--archive", e.archive, "--via-api", e.api.URL, "--date", "2024-03-02", "--yes")
			if r.code != 1 || e.staged(t) == 0 {
				t.Fatalf("exit %d, %d staged: %s", r.code, e.staged(t), r.stderr)
			}
			commands := printedCommands(r.stderr, "move what is there back with: ")
			commands = append(commands, printedCommands(r.stderr, "move them back with: ")...)
			w := e.dla(t, context.Background(), "stats", "--archive", e.archive)
			commands = append(commands, printedCommands(w.stderr, "move them back with: ")...)
			if len(commands) != 3 {
				t.Fatalf("want the staging line's, the summary's and the warning's commands, got %q:\n%s\n%s", commands, r.stderr, w.stderr)
			}
			for _, c := range commands[1:] {
				if c != commands[0] {
					t.Errorf("two commands for one folder:\n%s\n%s", commands[0], c)
				}
			}
			flags := awsFlags(t)
			for _, want := range []string{"--archive " + shellword.Quote(e.archive), shellword.Join(flags[0:2]...), shellword.Join(flags[2:4]...), shellword.Join(flags[4:6]...)} {
				if !strings.Contains(commands[0], want) {
					t.Errorf("the command lacks %q: %s", want, commands[0])
				}
			}
			t.Logf("running %s", commands[0])
			for _, c := range commands {
				if code, out := runPrintedInBash(t, c); code != 0 {
					t.Errorf("%s: exit %d:\n%s", c, code, out)
				}
			}
			if n := e.staged(t); n != 0 {
				t.Errorf("%d objects still in staging after the printed commands", n)
			}
			if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
				t.Errorf("after the printed command the archive is not as it was: %q", d)
			}
		})
	}
}

// Ctrl-C while the operation runs: the command printed for once it ends
// (apirecover's hint) runs as printed, pasted into bash, for a hostile
// stack and an endpoint given as a flag, and brings everything back.
func TestViaAPIHintAfterCtrlCRunsAsPrinted(t *testing.T) {
	e := newFlagEnv(t, hostileStacks[0])
	e.api.FailOperation = true
	e.api.RunningPolls = 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := e.dla(t, ctx, "recover", "--archive", e.archive, "--via-api", cancelAtFirstPoll(t, e.api.URL, cancel), "--date", "2024-03-02", "--yes")
	commands := printedCommands(r.stderr, "move what it left back with: ")
	if r.code != 130 || len(commands) != 1 || e.staged(t) == 0 {
		t.Fatalf("exit %d, %d staged, commands %q:\n%s", r.code, e.staged(t), commands, r.stderr)
	}
	code, out := runPrintedInBash(t, commands[0])
	if code != 0 {
		t.Fatalf("%s: exit %d:\n%s", commands[0], code, out)
	}
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
		t.Errorf("after the printed command the archive is not as it was: %q", d)
	}
}

// The objects --via-api leaves out are to be recovered here: the command
// printed for them, pasted into bash, reaches the same archive (a hostile
// stack, the endpoint a flag) and selects exactly those objects (one dla
// cannot read, one whose failed-sqs/ name is taken), in a dry run that
// changes nothing.
func TestViaAPILeftOutCommandRunsAsPrinted(t *testing.T) {
	dbURL := testsupport.NewCumulusDatabaseOf(t, testsupport.Generation(t), gen.ReferenceSeed())
	for _, stack := range hostileStacks {
		t.Run(strings.ReplaceAll(stack, "\n", `\n`), func(t *testing.T) {
			e := newFlagEnv(t, stack)
			layout := dla.Layout{Stack: stack}
			for k, v := range e.before {
				if strings.HasPrefix(k, layout.Root()+"sqs/2024-03-03/") && json.Valid([]byte(v)) {
					taken := layout.FailedKey(k, gjson.Get(v, "time").String(), time.Now())
					if err := e.store.Put(context.Background(), taken, []byte("{}")); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			e.before = e.snapshot(t)
			r := e.dla(t, context.Background(), "recover", "--archive", e.archive, "--via-api", e.api.URL, "--date", "2024-03-03", "--dry-run", "-o", "json")
			var res apirecover.Result
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 3 || len(res.LeftOut) != 2 {
				t.Fatalf("exit %d, %v, left out %+v:\n%s", r.code, err, res.LeftOut, r.stderr)
			}
			_, after, _ := strings.Cut(r.stderr, "then the same without --dry-run:\n  ")
			command, _, _ := strings.Cut(after, "\n")
			t.Logf("running %s", command)
			code, out := runPrintedInBash(t, command, "DATABASE_URL="+dbURL)
			if code != 0 && code != 3 {
				t.Fatalf("%s: exit %d:\n%s", command, code, out)
			}
			for _, l := range res.LeftOut {
				if !strings.Contains(out, textKey(l.Key)) {
					t.Errorf("the dry run does not report %q:\n%s", l.Key, out)
				}
			}
			if !strings.Contains(out, "dry run: 2 of 2 objects") {
				t.Errorf("the dry run is not of the 2 objects left out:\n%s", out)
			}
			if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
				t.Errorf("the dry run changed the archive: %q", d)
			}
		})
	}
}
