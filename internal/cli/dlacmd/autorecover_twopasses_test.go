package dlacmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/autorecover"
)

// Two `dla autorecover --mode recover` processes started at the same
// moment on one S3 archive (two schedules, or a person's pass beside the
// Lambda's): each either runs or is refused because the other holds the
// archive (exit 1, naming the lock), and between them no object is
// recovered twice: every object that left sqs/ is in exactly one pass's
// report, and what stays in sqs/ is in none. (Two passes in one process
// cannot be told apart by the lease, which takes a lock of its own PID
// for a lost reply's: the Lambda and the CLI run one pass a process.)
func TestTwoAutorecoverProcessesAtOnceRecoverEachObjectOnce(t *testing.T) {
	bin := testsupport.Binary(t, "github.com/deadletter/deadletter/cmd/dla", "DLA_E2E_BIN")
	e := newRecoverEnv(t, gen.ReferenceSeed(), nil)
	bucket := testsupport.NewBucket(t, e.s3)
	store := archive.NewS3(e.s3, bucket)
	ctx := context.Background()
	err := gen.Generate(gen.Options{Stack: "demo", Count: 80, Seed: 23, Days: 1, Start: time.Now().UTC().Add(-36 * time.Hour)},
		func(o gen.Object) error { return store.Put(ctx, o.Key, o.Body) })
	if err != nil {
		t.Fatal(err)
	}
	layout := dla.Layout{Stack: "demo"}
	before := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	type result struct {
		code           int
		stdout, stderr string
	}
	results := make([]result, 2)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "autorecover", "--archive", "s3://"+bucket+"/demo", "--database-url", e.dbURL,
				"--mode", "recover", "--yes", "--offline", "-o", "json")
			cmd.Env = append(os.Environ(), "DEADLETTER_NO_PROMPT=1")
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			<-start
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
			}
			results[i] = result{code, out.String(), errOut.String()}
		}()
	}
	close(start)
	wg.Wait()
	ran, selected := 0, 0 // selected: the objects the passes' recovers took, between them
	for i, r := range results {
		switch {
		case r.code == 0:
			ran++
			var rep autorecover.Report
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				t.Fatalf("pass %d: stdout is not the report (%v):\n%s", i, err, r.stdout)
			}
			for _, g := range rep.Groups {
				if g.Recovered != nil {
					selected += g.Recovered.Selected
				}
			}
		case r.code == 1 && strings.Contains(r.stderr, "another autorecover pass holds the archive"):
		default:
			t.Fatalf("pass %d: exit %d\n%s", i, r.code, r.stderr)
		}
	}
	t.Logf("exit codes %d and %d", results[0].code, results[1].code)
	if ran == 0 {
		t.Fatalf("both passes were refused:\n%s\n%s", results[0].stderr, results[1].stderr)
	}
	after := testsupport.KeySet(t, e.s3, bucket, layout.AreaPrefix(dla.AreaSQS))
	gone := 0
	for k := range before {
		if !after[k] {
			gone++
		}
	}
	t.Logf("%d of %d objects left sqs/; the reports selected %d", gone, len(before), selected)
	if gone == 0 {
		t.Fatal("no object left sqs/: the test shows nothing")
	}
	if selected != gone {
		t.Errorf("the reports selected %d objects between them, and %d left sqs/: an object was recovered twice, or left unreported", selected, gone)
	}
}
