package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// A run paused (SIGSTOP, Ctrl-Z, a VM freeze) for longer than its
// visibility timeout no longer holds its messages: another run replays
// them meanwhile. When the paused run continues it must send none of
// them, report them as hold_lost, list any send that was in flight as a
// possible duplicate, and exit 3. Every message ends up in exactly one
// place, apart from the possible duplicates the summaries list.
func TestPausedRunPastItsVisibilityTimeoutSendsNothingItNoLongerHolds(t *testing.T) {
	t.Parallel()
	w := seededWorld(t, 200)
	dir := t.TempDir()
	journalA := filepath.Join(dir, "a.ndjson")
	cmd := w.command(t.TempDir(), w.replayArgs("--yes", "--rate", "20", "--visibility-timeout", "3s", "--journal", journalA, "-o", "json")...)
	var outA, errA bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outA, &errA
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(journalA)
		if bytes.Contains(b, []byte(`"event":"sent"`)) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("run A never sent: %s", errA.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // past run A's visibility timeout
	outB, errB, codeB := w.run(nil, "", w.replayArgs("--yes", "--journal", filepath.Join(dir, "b.ndjson"), "-o", "json")...)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("run A did not end: %s", errA.String())
	}
	codeA := cmd.ProcessState.ExitCode()
	sumA := outA.String()
	t.Logf("run A exit %d: %s\n%s", codeA, sumA, errA.String())
	t.Logf("run B exit %d: %s\n%s", codeB, outB, errB)
	if codeA != 3 {
		t.Errorf("run A exit %d, want 3", codeA)
	}
	lost := gjson.Get(sumA, "hold_lost").Int()
	if lost == 0 || int64(len(gjson.Get(sumA, "hold_lost_ids").Array())) != lost || !strings.Contains(errA.String(), "hold lost") {
		t.Errorf("run A does not report the messages whose hold it lost: %s", sumA)
	}
	if eligibleA := gjson.Get(sumA, "eligible").Int(); gjson.Get(sumA, "sent").Int()+gjson.Get(sumA, "uncertain").Int()+lost+gjson.Get(sumA, "failed").Int()+gjson.Get(sumA, "abandoned").Int() != eligibleA {
		t.Errorf("run A's counts do not add up to its %d eligible: %s", eligibleA, sumA)
	}
	dupOK := map[string]bool{}
	for i, b := range w.bodies {
		for _, s := range []string{sumA, outB} {
			if gjson.Get(s, `possible_duplicate_ids.#(=="`+w.ids[i]+`")`).Exists() {
				dupOK[b] = true
			}
		}
	}
	w.exactlyOnce(w.places(1, 2), eligible, dupOK)
}
