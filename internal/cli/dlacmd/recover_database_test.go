package dlacmd

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// localGeneratedArchive writes n well-formed generated objects (March 2024)
// into a local archive and returns its --archive path.
func localGeneratedArchive(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	generateInto(t, dir, gen.Options{Stack: "demo", Count: n, Seed: 3, Days: 3, Malformed: -1, Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)})
	return filepath.Join(dir, "demo")
}

// treeDigest is every file under dir with the digest of its bytes.
func treeDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || isAuditKey(p) { // the runs' own records are not the archive's objects
			return err
		}
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		out[strings.TrimPrefix(p, dir)] = hex.EncodeToString(sum[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A database recover cannot write is refused before any object is read,
// moved or deleted, in one line that names what is wrong: an unknown or
// half-migrated schema (exit 2), a read-only database, a role without the
// privileges, a server that cannot be reached. A v22 database without the
// partition a message's date needs stops the run at the first write, with
// that message still in place.
func TestRecoverRefusesADatabaseItCannotWriteBeforeMovingAnything(t *testing.T) {
	seed := gen.ReferenceSeed()
	database := func(gen cumulusdb.Generation, sql string) func(t *testing.T) string {
		return func(t *testing.T) string {
			url := testsupport.NewCumulusDatabaseOf(t, gen, seed)
			if sql != "" {
				testsupport.ExecSQL(t, url, sql)
			}
			return url
		}
	}
	for _, c := range []struct {
		name string
		db   func(t *testing.T) string
		code int
		want []string
	}{
		{"no Cumulus tables", func(t *testing.T) string { return testsupport.NewDatabase(t) }, 2,
			[]string{"schema is not one dla can write: found no table collections", "nothing was read, moved or deleted"}},
		{"v21 missing a migration", database(cumulusdb.V21, `ALTER TABLE granules DROP COLUMN producer_granule_id`), 2,
			[]string{"found Cumulus v21 tables without column granules.producer_granule_id"}},
		{"v22 half migrated", database(cumulusdb.V22_3, `DROP TABLE executions_global_unique CASCADE`), 2,
			[]string{"found a half-migrated schema", "no executions_global_unique"}},
		{"read-only", func(t *testing.T) string {
			url := testsupport.NewCumulusDatabaseOf(t, testsupport.Generation(t), seed)
			testsupport.ExecSQL(t, url, `ALTER DATABASE `+strings.TrimPrefix(strings.SplitN(url[strings.LastIndex(url, "/"):], "?", 2)[0], "/")+` SET default_transaction_read_only = on`)
			return url
		}, 1, []string{"cannot take the writes: sessions are read-only", "nothing was moved or deleted"}},
		{"unreachable", func(t *testing.T) string { return "postgres://x@127.0.0.1:1/db?connect_timeout=5" }, 1,
			[]string{"cannot connect to PostgreSQL at 127.0.0.1:1, database \"db\""}},
		{"v22 without a partition for the dates", database(cumulusdb.V22_3,
			`ALTER TABLE executions DETACH PARTITION executions_default; ALTER TABLE executions DETACH PARTITION executions_2024_q1`), 3,
			[]string{"no partition of executions takes this row", "created_at", "create the partition of"}},
		// The same on a server that speaks German: decided from the
		// SQLSTATE and the relation, never the words.
		{"v22 without a partition for the dates, German server", func(t *testing.T) string {
			url := testsupport.NewGermanCumulusDatabase(t, cumulusdb.V22_2, seed)
			testsupport.ExecSQL(t, url, `ALTER TABLE executions DETACH PARTITION executions_default; ALTER TABLE executions DETACH PARTITION executions_2024_q1`)
			return url
		}, 3, []string{"keine Partition von Relation", "no partition of executions takes this row", "created_at", "create the partition of"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			archiveDir := localGeneratedArchive(t, 12)
			before := treeDigest(t, archiveDir)
			url := c.db(t)
			r := runAt(t, time.Now, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "recover", "--archive", archiveDir,
				"--database-url", url, "--offline", "--yes", "--concurrency", "1")
			if r.code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", r.code, c.code, r.stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "endpoint-url") {
				t.Errorf("a database failure sent to the AWS endpoint:\n%s", r.stderr)
			}
			after := treeDigest(t, archiveDir)
			if len(after) != len(before) {
				t.Fatalf("%d objects before, %d after", len(before), len(after))
			}
			for k, v := range before {
				if after[k] != v {
					t.Errorf("%s moved or changed", k)
				}
			}
		})
	}
}

// `dla dev db-init --cumulus` builds each generation as a deploy leaves it,
// seeded, and recover then reads that generation back from the catalog.
func TestDevDBInitBuildsEachGeneration(t *testing.T) {
	for _, c := range []struct{ flag, want string }{{"v21", "v21"}, {"v22", "v22.3"}, {"v22.1", "v22.0"}, {"v22.2", "v22.2"}} {
		t.Run(c.flag, func(t *testing.T) {
			url := testsupport.NewDatabase(t)
			r := run(t, false, nil, "", "dev", "db-init", "--cumulus", c.flag, "--database-url", url, "--seed-generated")
			if r.code != 0 || !strings.Contains(r.stderr, "Cumulus "+c.want+" tables ready") {
				t.Fatalf("db-init: exit %d: %s", r.code, r.stderr)
			}
			archiveDir := localGeneratedArchive(t, 5)
			r = run(t, false, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "recover", "--archive", archiveDir,
				"--database-url", url, "--offline", "--yes", "-o", "json")
			if r.code != 0 || !strings.Contains(r.stdout, `"schema":"`+c.want+`"`) {
				t.Fatalf("recover: exit %d, want 0 and schema %s:\n%s\n%s", r.code, c.want, r.stdout, r.stderr)
			}
		})
	}
	r := run(t, false, nil, "", "dev", "db-init", "--cumulus", "v23", "--database-url", "postgres://x@127.0.0.1:1/db")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown Cumulus schema "v23"`) {
		t.Fatalf("--cumulus v23: exit %d: %s", r.code, r.stderr)
	}
}

// An AWS endpoint that cannot be reached during the writes (S3 for the
// CMR files and file sizes, Step Functions) stops the run with the object
// in place, and the stop reads as one line naming the endpoint: no SDK
// operation chain, no request id.
func TestRecoverStoppedByAnUnreachableEndpointSaysWhichInOneLine(t *testing.T) {
	archiveDir := localGeneratedArchive(t, 6)
	before := treeDigest(t, archiveDir)
	url := testsupport.NewCumulusDatabaseOf(t, testsupport.Generation(t), gen.ReferenceSeed())
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_MAX_ATTEMPTS": "1"})
	r := runAt(t, time.Now, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "recover", "--archive", archiveDir,
		"--database-url", url, "--yes", "--concurrency", "1")
	if r.code != 3 || !strings.Contains(r.stderr, "stopped: ") || !strings.Contains(r.stderr, "cannot reach the AWS endpoint http://127.0.0.1:1 (S3)") {
		t.Fatalf("exit %d, want 3 and a stop naming the endpoint:\n%s", r.code, r.stderr)
	}
	for _, raw := range []string{"operation error", "RequestID", "https response error"} {
		if strings.Contains(r.stderr, raw) {
			t.Errorf("stderr holds the SDK's %q:\n%s", raw, r.stderr)
		}
	}
	// Objects written before the stop are deleted; nothing is moved to
	// failed-sqs/ for an outage.
	for k := range treeDigest(t, archiveDir) {
		if _, was := before[k]; !was {
			t.Errorf("%s appeared: an outage moved an object", k)
		}
	}
}
