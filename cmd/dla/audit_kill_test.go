package main_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math/rand"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	dlalayout "github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// archiveCensus is every object of the archive's sqs/ and failed-sqs/, with the
// sha256 of its bytes.
func archiveCensus(t *testing.T, s3spec string, store archive.Store) map[string][32]byte {
	t.Helper()
	bucket := strings.TrimPrefix(strings.TrimSuffix(s3spec, "/demo"), "s3://")
	out := map[string][32]byte{}
	for _, key := range testsupport.ListKeys(t, testsupport.S3Client(t), bucket, "demo/dead-letter-archive/") {
		if !strings.Contains(key, "/sqs/") && !strings.Contains(key, "/failed-sqs/") {
			continue // the audit records
		}
		b, err := store.Get(context.Background(), key)
		if errors.Is(err, archive.ErrNotFound) {
			t.Fatalf("%s was deleted while the census ran: a killed run's request still in flight", key)
		}
		if err != nil {
			t.Fatal(err)
		}
		out[key] = sha256.Sum256(b)
	}
	return out
}

// SIGKILL of `dla recover` over S3, at random moments, in rounds, with
// audit chunks of 3 items (DEADLETTER_AUDIT_CHUNK_LINES): after each
// kill, `dla history` shows the run as "did not finish"; every item its
// record holds matches what really happened to the object (deleted: gone;
// moved: gone, and its failed-sqs/ copy holds the same bytes by sha256;
// left: still there), and every object the round really moved or deleted
// is among the items but for at most the last chunk (the one gathered
// and the one being written) and the moves in flight. A last run to the end finishes its record.
func TestAKilledRecoverLeavesARecordHistoryShowsAsDidNotFinish(t *testing.T) {
	const chunk = 3
	store, spec, env := migrateTarget(t, "s3")
	sts := testsupport.STSResponder(t, "arn:aws:sts::123456789012:assumed-role/ops-oncall/alice", "123456789012")
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	env = append(env, "DEADLETTER_NO_PROMPT=1", "DEADLETTER_AUDIT_CHUNK_LINES="+strconv.Itoa(chunk), "AWS_ENDPOINT_URL_STS="+sts)
	opts := gen.Options{Stack: "demo", Count: 120, Seed: 17, Days: 2, MinGranules: 1, MaxGranules: 3,
		Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)}
	if err := gen.Generate(opts, func(o gen.Object) error { return store.Put(context.Background(), o.Key, o.Body) }); err != nil {
		t.Fatal(err)
	}
	layout := dlalayout.Layout{Stack: "demo"}
	rng := rand.New(rand.NewSource(39))
	args := func(conc int) []string {
		return []string{"recover", "--archive", spec, "--database-url", dbURL, "--include-legacy", "--offline", "--yes",
			"--concurrency", strconv.Itoa(conc), "--reason", "INC-39", "-o", "ndjson"}
	}
	kills, maxMissing, recorded := 0, 0, 0
	for round := range 6 {
		conc := []int{1, 4}[round%2]
		before := archiveCensus(t, spec, store)
		runsBefore, _, err := audit.List(context.Background(), store, layout.AuditPrefix(), audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		w := &lineCounter{n: 2 + rng.Intn(12), at: make(chan struct{})}
		cmd := exec.Command(dlaBin, args(conc)...)
		cmd.Env, cmd.Stdout = env, w
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		killed := false
		select {
		case <-w.at:
			time.Sleep(time.Duration(rng.Intn(40)) * time.Millisecond)
			_ = cmd.Process.Kill()
			<-exited
			killed = cmd.ProcessState.ExitCode() == -1
			// A request the process sent just before it died may still be
			// served: let the server finish it before the census.
			time.Sleep(300 * time.Millisecond)
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("round %d: a run neither reported %d objects nor ended: %s", round, w.n, stderr.String())
		}
		after := archiveCensus(t, spec, store)
		runs, problems, err := audit.List(context.Background(), store, layout.AuditPrefix(), audit.Filter{})
		if err != nil || len(problems) > 0 || len(runs) != len(runsBefore)+1 {
			t.Fatalf("round %d: %d records after, %d before (%v %v)", round, len(runs), len(runsBefore), err, problems)
		}
		run := newRun(runsBefore, runs)
		if err := run.LoadItems(context.Background(), store); err != nil {
			t.Fatal(err)
		}
		if run.Actor.AWSARN == nil || run.Reason != "INC-39" {
			t.Errorf("round %d: actor %+v, reason %q", round, run.Actor, run.Reason)
		}
		if !killed {
			if run.Finished == nil {
				t.Errorf("round %d: a run that ended has no finished record", round)
			}
			continue
		}
		if run.Finished != nil {
			// The kill came after the run wrote its finished record (its
			// last objects done), as it was exiting: not killed part way.
			t.Logf("round %d: killed after its record was finished", round)
			continue
		}
		kills++
		// Every item matches the census.
		named := map[string]bool{}
		for _, it := range run.Items {
			named[it.Key] = true
			_, was := before[it.Key]
			_, still := after[it.Key]
			switch it.Action {
			case "deleted":
				if !was || still {
					t.Errorf("round %d: item %s deleted, but it was there %v, is there %v", round, it.Key, was, still)
				}
			case "moved":
				if !was || still || after[it.MovedTo] != before[it.Key] {
					t.Errorf("round %d: item %s moved to %s, but the copy does not hold its bytes (there before %v, still %v)", round, it.Key, it.MovedTo, was, still)
				}
			case "left", "kept":
				if !still {
					t.Errorf("round %d: item %s left, but it is gone", round, it.Key)
				}
			}
		}
		recorded += len(run.Items)
		// Every real move or delete is an item, but for the last chunk
		// and what was in flight.
		missing := 0
		for k := range before {
			if _, still := after[k]; !still && !named[k] && strings.Contains(k, "/sqs/") {
				missing++
			}
		}
		maxMissing = max(maxMissing, missing)
		// The chunk being gathered, the one being written, and the moves
		// in flight (the tails, 4 per object written at once, 16 at least,
		// and the writes): done, but not yet handed to the record.
		if limit := 2*chunk + max(16, 4*conc) + conc; missing > limit {
			t.Errorf("round %d (concurrency %d): %d objects moved or deleted are not in the record (at most %d allowed: the last chunks and what was in flight)",
				round, conc, missing, limit)
		}
		t.Logf("round %d (concurrency %d): killed after %d objects reported; %d items recorded in %d chunks, %d moves unrecorded",
			round, conc, w.n, len(run.Items), len(run.Chunks), missing)
	}
	if kills < 3 {
		t.Fatalf("only %d runs were killed part way (the test proves little)", kills)
	}
	// `dla history` names every killed run "did not finish".
	cmd := exec.Command(dlaBin, "history", "--archive", spec)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "did not finish"); n != kills {
		t.Errorf("history shows %d runs that did not finish, %d were killed:\n%s", n, kills, out)
	}
	// A last run to the end finishes its record.
	runsBefore, _, _ := audit.List(context.Background(), store, layout.AuditPrefix(), audit.Filter{})
	cmd = exec.Command(dlaBin, args(4)...)
	cmd.Env = env
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("the last run: %v", err)
	}
	runs, _, _ := audit.List(context.Background(), store, layout.AuditPrefix(), audit.Filter{})
	if len(runs) != len(runsBefore)+1 || newRun(runsBefore, runs).Finished == nil {
		t.Fatal("the last run left no finished record")
	}
	t.Logf("%d rounds killed; %d items recorded by the killed runs; at most %d moves unrecorded in a round (chunks of %d)", kills, recorded, maxMissing, chunk)
}

// newRun is the run of after that before does not have (two runs started
// in one second sort by their random part, not by their start).
func newRun(before, after []audit.Run) audit.Run {
	seen := map[string]bool{}
	for _, r := range before {
		seen[r.RunID] = true
	}
	for _, r := range after {
		if !seen[r.RunID] {
			return r
		}
	}
	return audit.Run{}
}

// Ctrl-C (SIGINT) part way through a recover: the objects in flight
// finish, and the record is finished too, marked interrupted, with the
// exit code 130 and one item for every object the run reported.
func TestAnInterruptedRecoverFinishesItsRecordAsInterrupted(t *testing.T) {
	dbURL, _, root, _ := recoverSetup(t, 200, 12, 5)
	cmd := exec.Command(dlaBin, "recover", "--archive", root+"/demo", "--include-legacy", "--database-url", dbURL,
		"--offline", "--yes", "--concurrency", "2", "--reason", "INC-39", "-o", "ndjson")
	cmd.Env = append(cmd.Environ(), "DEADLETTER_AUDIT_CHUNK_LINES=7")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	objects := 0
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"object"`) {
			objects++
			if objects == 30 {
				_ = cmd.Process.Signal(syscall.SIGINT)
			}
		}
	}
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 130 {
		t.Fatalf("after SIGINT: %v, want exit 130: %s", err, stderr.String())
	}
	store, err := archive.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	runs, _, err := audit.List(context.Background(), store, dlalayout.Layout{Stack: "demo"}.AuditPrefix(), audit.Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d records: %v", len(runs), err)
	}
	run := runs[0]
	if err := run.LoadItems(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	if f := run.Finished; f == nil || !f.Interrupted || f.ExitCode != 130 || f.Items != objects || len(run.Items) != objects || f.Unrecorded != 0 {
		t.Fatalf("finished record %+v, %d items read, %d objects reported", run.Finished, len(run.Items), objects)
	}
	if objects >= 200 {
		t.Fatal("the run was not interrupted part way")
	}
}
