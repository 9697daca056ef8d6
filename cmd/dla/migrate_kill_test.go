package main_test

import (
	"context"
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// legacyArchive is n legacy objects (flat, pre-v18.3 keys: sqs/<name>.json)
// in store, their bodies generated; it returns their file names.
func legacyArchive(t *testing.T, store archive.Store, n int) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	err := gen.Generate(gen.Options{Stack: "demo", Count: n, Seed: 5, Days: 3, Malformed: -1, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		func(o gen.Object) error {
			name := path.Base(o.Key) + ".json"
			names[name] = true
			return store.Put(context.Background(), "demo/dead-letter-archive/sqs/"+name, o.Body)
		})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// census checks that every legacy object is in a date folder exactly once,
// under its own name (no ".1" second copy), and that no legacy key is
// left.
func census(t *testing.T, store archive.Store, names map[string]bool) {
	t.Helper()
	seen := map[string]int{}
	err := store.List(context.Background(), "demo/dead-letter-archive/", false, func(e archive.Entry) error {
		if strings.HasPrefix(e.Key, "demo/dead-letter-archive/audit/") {
			return nil // the runs' own records
		}
		rel := strings.TrimPrefix(e.Key, "demo/dead-letter-archive/sqs/")
		if !strings.Contains(rel, "/") {
			t.Errorf("%s: a legacy key is left", e.Key)
			return nil
		}
		seen[path.Base(e.Key)]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range names {
		if seen[name] != 1 {
			t.Errorf("%s: %d copies in the date folders, want 1", name, seen[name])
		}
		delete(seen, name)
	}
	for name, n := range seen {
		t.Errorf("%s: %d objects that are no legacy object's (a second copy?)", name, n)
	}
}

// SIGKILL at random moments of a migrate-legacy (32 objects at once),
// several times, then a run to the end, in a local folder and in S3: each
// object is in its date folder once. A move killed between its copy and
// its delete leaves a copy the next run finds again by its origin (an
// extended attribute locally, metadata in S3) instead of making a second
// one, and the killed run's lock is taken over.
func TestMigrateLegacySIGKILLLoopLeavesEachObjectOnce(t *testing.T) {
	for _, where := range []string{"local", "s3"} {
		t.Run(where, func(t *testing.T) {
			store, spec, env := migrateTarget(t, where)
			names := legacyArchive(t, store, 600)
			args := []string{"migrate-legacy", "--archive", spec, "--offline", "--yes", "--concurrency", "32", "-o", "ndjson"}
			rng := rand.New(rand.NewSource(7))
			for i := 0; i < 8; i++ {
				cmd := exec.Command(dlaBin, args...)
				cmd.Env = env
				testsupport.StartProc(t, cmd).KillAfter(time.Duration(20+rng.Intn(150)) * time.Millisecond)
			}
			cmd := exec.Command(dlaBin, args...)
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the run after the kills: %v\n%s", err, lastLine(string(out)))
			}
			census(t, store, names)
		})
	}
}

// migrateTarget is an empty archive in a local folder or in a new S3
// bucket, its --archive spec and the environment a dla process needs.
func migrateTarget(t *testing.T, where string) (archive.Store, string, []string) {
	t.Helper()
	env := os.Environ()
	if where == "local" {
		root := t.TempDir()
		s, err := archive.NewLocal(root)
		if err != nil {
			t.Fatal(err)
		}
		return s, filepath.Join(root, "demo"), env
	}
	c := testsupport.S3Client(t)
	bucket := testsupport.NewBucket(t, c)
	env = append(env, "AWS_ENDPOINT_URL_S3="+testsupport.S3Endpoint(t), "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID="+testsupport.AccessKey, "AWS_SECRET_ACCESS_KEY="+testsupport.SecretKey,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
	return archive.NewS3(c, bucket), "s3://" + bucket + "/demo", env
}

// Three migrate-legacy runs of one archive at once, locally and in S3: one
// takes the archive's lock and moves every object; the others are refused
// while it runs (exit 1, naming the holder), or find nothing left. Each
// object is moved once, and the counts add up exactly.
func TestMigrateLegacyConcurrentRunsConverge(t *testing.T) {
	for _, where := range []string{"local", "s3"} {
		t.Run(where, func(t *testing.T) {
			store, spec, env := migrateTarget(t, where)
			names := legacyArchive(t, store, 400)
			var mu sync.Mutex
			results := map[string]int{}
			refused := 0
			var wg sync.WaitGroup
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := exec.Command(dlaBin, "migrate-legacy", "--archive", spec, "--offline", "--yes", "--concurrency", "16", "-o", "ndjson")
					cmd.Env = env
					var stderr strings.Builder
					cmd.Stderr = &stderr
					out, err := cmd.Output()
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						if !strings.Contains(stderr.String(), "another dla migrate-legacy holds the archive since") {
							t.Errorf("a run failed: %v\n%s", err, stderr.String())
						}
						refused++
					}
					for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
						var r struct{ Result string }
						if line != "" && json.Unmarshal([]byte(line), &r) == nil {
							results[r.Result]++
						}
					}
				}()
			}
			wg.Wait()
			census(t, store, names)
			if results["moved"] != len(names) || results["failed"] != 0 || refused > 2 {
				t.Errorf("results across the runs %v (%d refused), want %d moved and none failed", results, refused, len(names))
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
