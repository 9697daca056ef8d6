package pushdlqcmd

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// An export --delete that reads on past SQS's in-flight limit (rounds:
// deletes before the file is committed), SIGKILLed at a random moment,
// then finished with the command its refusal prints (itself SIGKILLed at
// a random moment once, then run to its end): every seeded body is in
// exactly one place, the file (once) or the DLQ.
func TestExportDeleteKilledAtRandomThenResumedLosesNothing(t *testing.T) {
	bin := pushdlqBinary(t)
	runs := 3 // HOSTILE_RUNS=N for more
	if s := os.Getenv("HOSTILE_RUNS"); s != "" {
		fmt.Sscan(s, &runs)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for r := 0; r < runs; r++ {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			c := testsupport.SQSClient(t)
			dlq := testsupport.NewQueue(t, c, "kc", false)
			var bodies []string
			for i := 0; i < 90; i++ {
				var b string
				switch i % 6 {
				case 0:
					b = fmt.Sprintf(`{"action":"push","priority":1,"errorCode":1004,"n":%d}`, i)
				case 1:
					b = fmt.Sprintf("%d line\r\nCR\r\u2028\u2029 tab\t", i)
				case 2:
					b = fmt.Sprintf(`[%d,"not an object"]`, i)
				case 3:
					b = fmt.Sprintf(`{"message_id":"m-%d","body":"x"}`, i)
				case 4:
					b = fmt.Sprintf("%d %s", i, strings.Repeat("é", 3000))
				default:
					b = fmt.Sprintf(`%d "q" \u0000 <&>`, i)
				}
				bodies = append(bodies, b)
			}
			testsupport.SendBodies(t, c, dlq, bodies, nil)
			// A proxy per process: the proxy's in-flight set never forgets a
			// killed run's holds, which SQS frees after their visibility.
			proxy := func() string { return testsupport.NewInFlightLimitProxy(t, testsupport.SQSEndpoint(t), 25).URL }
			env := append(os.Environ(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
				"AWS_EC2_METADATA_DISABLED=true", "DEADLETTER_NO_PROMPT=1")
			file := filepath.Join(t.TempDir(), "out.ndjson")
			argsAt := func(url string) []string {
				return []string{"export", "--dlq", dlq, "--out", file, "--delete", "--yes", "--visibility-timeout", "2s", "--wait", "1s", "--endpoint-url", url}
			}
			args := argsAt(proxy())
			run := func(kill time.Duration, argv ...string) (string, int) {
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = env
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				var se bytes.Buffer
				cmd.Stderr = &se
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				if kill > 0 {
					go func() {
						select {
						case <-time.After(kill):
							syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
						case <-done:
						}
					}()
				}
				cmd.Wait()
				close(done)
				return se.String(), cmd.ProcessState.ExitCode()
			}
			k := time.Duration(50+rng.IntN(2500)) * time.Millisecond
			_, code := run(k, append([]string{bin}, args...)...)
			t.Logf("first run killed after %s: exit %d", k, code)
			resumed := false
			for attempt := 0; attempt < 5; attempt++ {
				if _, err := os.Stat(file + ".partial"); err != nil {
					break
				}
				resumed = true
				stderr, code := run(0, append([]string{bin}, argsAt(proxy())...)...)
				m := regexp.MustCompile(`(?m)^  (pushdlq export .*)$`).FindStringSubmatch(stderr)
				if code != 2 || m == nil {
					t.Fatalf("again: exit %d\n%s", code, stderr)
				}
				var kill time.Duration
				if attempt == 0 {
					kill = time.Duration(100+rng.IntN(4000)) * time.Millisecond
				}
				stderr, code = run(kill, "bash", "-c", strings.Replace(m[1], "pushdlq", bin, 1))
				t.Logf("resume %d (kill %s): exit %d\n%s", attempt, kill, code, lastLines(stderr, 4))
			}
			time.Sleep(3 * time.Second) // killed runs' holds run out
			places := map[string][]string{}
			for _, m := range testsupport.Drain(t, c, dlq, time.Second) {
				places[*m.Body] = append(places[*m.Body], "dlq")
			}
			if _, err := os.Stat(file + ".partial"); err == nil {
				t.Errorf("%s.partial left after the resumes (%d lines)", file, len(testsupport.ReadLines(t, file+".partial")))
			}
			switch _, err := os.Stat(file); {
			case err == nil:
				testsupport.ExportFileCensus(t, file, places)
			case resumed:
				t.Errorf("no %s after the resumes: %v", file, err)
			default:
				// Killed before it wrote its .partial (a loaded machine can
				// take that long to start it): nothing to resume, and every
				// body must still be in the DLQ (below).
				t.Logf("the first run left no file: killed before it began")
			}
			for _, b := range bodies {
				if len(places[b]) != 1 {
					t.Errorf("%.30q is in %v, want exactly one place", b, places[b])
				}
			}
			if len(places) != len(bodies) {
				t.Errorf("%d distinct bodies, %d seeded", len(places), len(bodies))
			}
		})
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
