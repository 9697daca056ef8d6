package dlacmd

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// `dla autorecover --mode recover` SIGKILLed at random moments, round
// after round, on an outage archive in S3, then run to its end: nothing
// is lost (every transient object is in sqs/ or written, at the end all
// written and gone from sqs/, none moved to failed-sqs/; the fix-first and
// permanent ones untouched), and nothing is written twice (one executions
// row each, and no object named twice as deleted across the passes'
// records). Each pass after a kill takes over the dead process's lease.
func TestAutorecoverKilledAtRandomThenRunToItsEndLosesAndDoublesNothing(t *testing.T) {
	bin := testsupport.Binary(t, "github.com/deadletter/deadletter/cmd/dla", "DLA_E2E_BIN")
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	bucket := testsupport.NewBucket(t, e.s3)
	store := archive.NewS3(e.s3, bucket)
	ctx := context.Background()
	arnOf := map[string]string{} // transient key -> execution ARN
	var others []string
	err := gen.Generate(gen.Options{Stack: "demo", Count: 200, Seed: 29, Days: 1, Start: time.Now().UTC().Add(-36 * time.Hour), Outage: true,
		MinGranules: 1, MaxGranules: 2},
		func(o gen.Object) error {
			d, err := dla.Decode(o.Body)
			if err != nil {
				return err
			}
			if d.Error == gen.OutageTransient {
				arnOf[o.Key] = d.ExecutionArn
			} else {
				others = append(others, o.Key)
			}
			return store.Put(ctx, o.Key, o.Body)
		})
	if err != nil {
		t.Fatal(err)
	}
	layout := dla.Layout{Stack: "demo"}
	sqsPrefix := layout.AreaPrefix(dla.AreaSQS)
	written := func(arn string) bool {
		return testsupport.QueryInt(t, e.dbURL, "SELECT count(*) FROM executions WHERE arn = '"+arn+"'") > 0
	}
	pass := func(kill time.Duration) (code int, stderr string) {
		cmd := exec.Command(bin, "autorecover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL,
			"--mode", "recover", "--yes", "--offline", "--concurrency", "1", "-o", "json")
		cmd.Env = append(os.Environ(), "DEADLETTER_NO_PROMPT=1")
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if kill > 0 {
			timer := time.AfterFunc(kill, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
			defer timer.Stop()
		}
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), errOut.String()
		}
		return 0, errOut.String()
	}
	rng := rand.New(rand.NewPCG(29, uint64(time.Now().UnixNano())))
	killed := 0
	for round := range 10 {
		kill := time.Duration(100+rng.IntN(600)) * time.Millisecond
		code, stderr := pass(kill)
		if code == -1 {
			killed++
		} else if code != 0 {
			t.Fatalf("round %d (kill after %v): exit %d\n%s", round, kill, code, stderr)
		}
		// Nothing lost at any moment: a transient object is in sqs/ or written.
		left := testsupport.KeySet(t, e.s3, bucket, sqsPrefix)
		still := 0
		for key, arn := range arnOf {
			if left[key] {
				still++
			} else if !written(arn) {
				t.Fatalf("round %d: %s left sqs/ and its execution is not written", round, key)
			}
		}
		t.Logf("round %d: exit %d after %v, %d of %d transient objects still in sqs/", round, code, kill, still, len(arnOf))
		if code == 0 {
			break
		}
	}
	if code, stderr := pass(0); code != 0 {
		t.Fatalf("the last pass: exit %d\n%s", code, stderr)
	}
	t.Logf("%d passes were killed before the last", killed)
	if killed == 0 {
		t.Fatal("no pass was killed: the test shows nothing")
	}
	left := testsupport.KeySet(t, e.s3, bucket, sqsPrefix)
	for key, arn := range arnOf {
		if left[key] {
			t.Errorf("%s is still in sqs/", key)
		}
		if n := testsupport.QueryInt(t, e.dbURL, "SELECT count(*) FROM executions WHERE arn = '"+arn+"'"); n != 1 {
			t.Errorf("%s: %d executions rows, want 1", key, n)
		}
	}
	for _, key := range others {
		if !left[key] {
			t.Errorf("%s (fix-first or permanent) left sqs/", key)
		}
	}
	if moved := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaFailed)); len(moved) != 0 {
		t.Errorf("%d objects moved to failed-sqs/", len(moved))
	}
	runs, _, err := audit.List(ctx, store, layout.AuditPrefix(), audit.Filter{Tool: "dla", Verbs: []string{"autorecover"}})
	if err != nil {
		t.Fatal(err)
	}
	deleted := map[string]int{}
	for i := range runs {
		if err := runs[i].LoadItems(ctx, store); err != nil {
			t.Logf("record %s: %v", runs[i].Folder, err)
		}
		for _, it := range runs[i].Items {
			if strings.HasPrefix(it.Key, sqsPrefix) && it.Action == "deleted" {
				deleted[it.Key]++
			}
		}
	}
	for key, n := range deleted {
		if n > 1 {
			t.Errorf("%s is named deleted by %d records", key, n)
		}
	}
	if len(deleted) == 0 {
		t.Error("no record names an object deleted: the check shows nothing")
	}
}
