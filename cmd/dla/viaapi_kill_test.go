package main_test

import (
	"context"
	"math/rand"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakecumulus"
)

// SIGKILL at random moments of `dla recover --via-api` (staging, the start
// of the operation, the wait for it), several times, against the fake
// Cumulus API, where every write fails, so Cumulus copies each message to
// failed-sqs/. Then what operators do: any verb warns about what is left in
// recover-staging/ and prints the command that brings it back; those
// commands run; a last recover runs to the end. Each message is then in the
// archive exactly once, byte for byte, and nothing is left in staging.
func TestRecoverViaAPISIGKILLLoopLosesAndDoublesNothing(t *testing.T) {
	_, spec, env := migrateTarget(t, "s3")
	c := testsupport.S3Client(t)
	bucket := strings.TrimPrefix(strings.TrimSuffix(spec, "/demo"), "s3://")
	store := archive.NewS3(c, bucket)
	bodies := map[string]int{}
	err := gen.Generate(gen.Options{Stack: "demo", Count: 400, Seed: 11, Days: 3, Malformed: -1, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		func(o gen.Object) error {
			bodies[string(o.Body)]++
			return store.Put(context.Background(), o.Key, o.Body)
		})
	if err != nil {
		t.Fatal(err)
	}
	api := fakecumulus.New(t, "tok", "demo", func(string) archive.Store { return store })
	api.Written = func(string, []byte) bool { return false }
	env = append(env, "CUMULUS_API_TOKEN=tok", "DEADLETTER_NO_PROMPT=1")
	args := []string{"recover", "--archive", spec, "--via-api", api.URL, "--yes", "--concurrency", "16", "-o", "ndjson"}

	// Six kills at random moments; on a loaded machine a run may not reach
	// its staging by then, so the kills go on, each later than the last,
	// until one has left something in staging (at most 20).
	rng := rand.New(rand.NewSource(3))
	staged := func() bool {
		for _, k := range testsupport.ListKeys(t, c, bucket, "demo/dead-letter-archive/recover-staging/") {
			if strings.Contains(strings.TrimPrefix(k, "demo/dead-letter-archive/recover-staging/"), "/") {
				return true
			}
		}
		return false
	}
	for i := 0; i < 20 && (i < 6 || !staged()); i++ {
		cmd := exec.Command(dlaBin, args...)
		cmd.Env = env
		testsupport.StartProc(t, cmd).KillAfter(time.Duration(30+rng.Intn(400)+max(0, i-5)*400) * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // an operation a killed run started ends (the fake runs it at once)

	// The warning of any verb, and the commands it prints.
	stats := exec.Command(dlaBin, "stats", "--archive", spec)
	stats.Env = env
	out, _ := stats.CombinedOutput()
	cleanups := 0
	for _, line := range strings.Split(string(out), "\n") {
		_, command, ok := strings.Cut(line, "move them back with: dla ")
		if !ok {
			continue
		}
		words, err := shellword.Split(command)
		if err != nil {
			t.Fatalf("the printed command does not parse: %q", command)
		}
		cleanup := exec.Command(dlaBin, append(words, "--yes")...)
		cleanup.Env = env
		if b, err := cleanup.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", command, err, b)
		}
		cleanups++
	}
	if cleanups == 0 {
		t.Fatalf("no kill left anything in staging (the test proves nothing): %s", out)
	}
	t.Logf("%d staging folders brought back", cleanups)
	last := exec.Command(dlaBin, args...)
	last.Env = env
	if b, err := last.CombinedOutput(); err != nil && last.ProcessState.ExitCode() != 3 {
		t.Fatalf("the run after the kills: %v\n%s", err, lastLine(string(b)))
	}

	// Census: each message once, nothing in staging.
	seen := map[string]int{}
	for _, k := range testsupport.ListKeys(t, c, bucket, "demo/dead-letter-archive/") {
		if strings.Contains(k, "/recover-staging/") {
			if strings.HasSuffix(k, ".json") && !strings.Contains(strings.TrimPrefix(k, "demo/dead-letter-archive/recover-staging/"), "/") {
				continue // a run's manifest, beside its (empty) folder
			}
			t.Errorf("%s: left in staging", k)
			continue
		}
		if !strings.Contains(k, "/sqs/") && !strings.Contains(k, "/failed-sqs/") {
			continue // the lock object, a run's journal
		}
		b, err := store.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		seen[string(b)]++
	}
	for body, n := range bodies {
		if seen[body] != n {
			t.Errorf("a message is in the archive %d times, want %d: %.80s", seen[body], n, body)
		}
		delete(seen, body)
	}
	for body := range seen {
		t.Errorf("an object that is no message of the archive's: %.80s", body)
	}
}
