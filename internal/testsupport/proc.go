package testsupport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proc is a binary a test started in order to kill it at a chosen moment
// (the kill tests of dla and pushdlq). Its stdout and stderr are kept,
// unless the command had writers of its own; it is killed when the test
// ends at the latest.
type Proc struct {
	Cmd            *exec.Cmd
	Stdout, Stderr bytes.Buffer
	once           sync.Once
}

// StartProc starts cmd.
func StartProc(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{Cmd: cmd}
	if cmd.Stdout == nil {
		cmd.Stdout = &p.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &p.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// Kill sends SIGKILL and waits for the process to end (once).
func (p *Proc) Kill() {
	p.once.Do(func() {
		_ = p.Cmd.Process.Kill()
		_ = p.Cmd.Wait()
	})
}

// KillAfter kills the process after d.
func (p *Proc) KillAfter(d time.Duration) {
	time.Sleep(d)
	p.Kill()
}

// Await waits for each of ready in turn; when timeout passes first, it
// kills the process and fails the test, saying what it waited for and
// what the process printed on stderr.
func (p *Proc) Await(t testing.TB, timeout time.Duration, what string, ready ...<-chan struct{}) {
	t.Helper()
	deadline := time.After(timeout)
	for _, ch := range ready {
		select {
		case <-ch:
		case <-deadline:
			p.Kill()
			t.Fatalf("%s: %s", what, p.Stderr.String())
		}
	}
}

// KillWhen waits for ready (as Await) and then kills the process.
func (p *Proc) KillWhen(t testing.TB, timeout time.Duration, what string, ready ...<-chan struct{}) {
	t.Helper()
	p.Await(t, timeout, what, ready...)
	p.Kill()
}

// RunWithBinary is a TestMain for the tests of a command's binary: it
// builds the main package in the working directory as name in a folder of
// its own (or, when the environment variable env is set, takes the build
// it names: another build, e.g. to show a test fails without a fix), sets
// *path to it, runs the tests, removes the folder and exits.
func RunWithBinary(m *testing.M, name, env string, path *string) {
	dir, err := os.MkdirTemp("", name+"-e2e")
	if err != nil {
		panic(err)
	}
	*path = filepath.Join(dir, name)
	if b := os.Getenv(env); env != "" && b != "" {
		*path = b
	} else if out, err := exec.Command("go", "build", "-o", *path, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// ReadLines is the lines of a file of JSON lines (a journal, an export),
// blank ones left out.
func ReadLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			out = append(out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// HeadOne runs cmd with its stdout read as `| head -1` reads it: one line,
// then the pipe is closed. during, when not nil, runs once the line is read
// and before the pipe is closed (while the run is surely still going). It
// returns the line, what the command wrote on stderr and how it ended; a
// command that does not end within 90 s of losing its stdout is killed and
// fails the test.
func HeadOne(t testing.TB, cmd *exec.Cmd, during func()) (line, stderr string, state *os.ProcessState) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err = bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("no first line: %v; stderr: %s", err, errOut.String())
	}
	if during != nil {
		during()
	}
	stdout.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the run did not end after its stdout was closed: %s", errOut.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return line, errOut.String(), cmd.ProcessState
}

var builds struct {
	sync.Mutex
	dir string
	bin map[string]string
	err map[string]error
}

// Binary is the build of the main package importPath (its last element is
// the binary's name) for the tests of a package that run it: built once
// per test process, or, when the environment variable env is set, the
// build it names (scripts/test builds dla and pushdlq once for every job).
// A TestMain that calls it removes the builds with RemoveBinaries.
func Binary(t testing.TB, importPath, env string) string {
	t.Helper()
	if b := os.Getenv(env); env != "" && b != "" {
		return b
	}
	builds.Lock()
	defer builds.Unlock()
	if b, ok := builds.bin[importPath]; ok {
		return b
	}
	if err, ok := builds.err[importPath]; ok {
		t.Fatal(err)
	}
	if builds.bin == nil {
		builds.bin, builds.err = map[string]string{}, map[string]error{}
	}
	var err error
	if builds.dir == "" {
		if builds.dir, err = os.MkdirTemp("", "deadletter-test-bin"); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(builds.dir, strings.ReplaceAll(importPath, "/", "_"))
	bin := filepath.Join(dir, filepath.Base(importPath))
	if out, berr := exec.Command("go", "build", "-o", bin, importPath).CombinedOutput(); berr != nil {
		builds.err[importPath] = errors.New("go build " + importPath + ": " + berr.Error() + "\n" + string(out))
		t.Fatal(builds.err[importPath])
	}
	builds.bin[importPath] = bin
	return bin
}

// RemoveBinaries removes what Binary built (a TestMain's, after m.Run).
func RemoveBinaries() {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.dir, builds.bin, builds.err = "", nil, nil
}

// KeepGoToolCaches pins the go tool's build and module caches, its
// GOPATH and its environment file to where they are now, for a TestMain
// that gives the tests a HOME of their own: a `go build` a test runs
// would otherwise start from empty caches under the new HOME, compiling
// every dependency again (minutes on a busy machine) and downloading
// every module.
func KeepGoToolCaches() error {
	vars := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV"}
	out, err := exec.Command("go", append([]string{"env"}, vars...)...).Output() // one value a line
	if err != nil {
		return errors.New("go env: " + err.Error())
	}
	values := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(values) != len(vars) {
		return fmt.Errorf("go env printed %d lines for %d variables", len(values), len(vars))
	}
	for i, v := range vars {
		if os.Getenv(v) == "" {
			os.Setenv(v, values[i])
		}
	}
	return nil
}
