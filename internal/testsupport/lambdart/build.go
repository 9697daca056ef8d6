package lambdart

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// BuildFlags are the go build flags of a processor's bootstrap, the same as
// .goreleaser.yaml's (flags and ldflags). Keep them in step.
var BuildFlags = []string{"-trimpath", "-tags=lambda.norpc", "-ldflags=-s -w"}

var (
	buildMu    sync.Mutex
	buildCache = map[string]string{} // pkg → bootstrap path
)

// Build compiles the main package pkg (e.g. "./cmd/push-dlq", relative to
// the module root, which is found from the test's working directory) as a
// linux `bootstrap` binary, CGO_ENABLED=0 and -trimpath as goreleaser
// builds it, once per test process per pkg, and returns its path.
//
// The binary lives in a stable folder under the temp dir (per module root
// and pkg) and is replaced atomically, so parallel test processes do not
// tread on each other and repeated runs do not pile up copies.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := buildCache[pkg]; ok {
		return p
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatalf("lambdart: %v", err)
	}
	sum := sha256.Sum256([]byte(root + "\x00" + pkg))
	dir := filepath.Join(os.TempDir(), "deadletter-lambdart", hex.EncodeToString(sum[:8]), strings.Trim(filepath.Base(pkg), "."))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("lambdart: %v", err)
	}
	tmp, err := os.CreateTemp(dir, "bootstrap.*.tmp")
	if err != nil {
		t.Fatalf("lambdart: %v", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())

	args := append([]string{"build"}, BuildFlags...)
	args = append(args, "-o", tmp.Name(), pkg)
	cmd := exec.Command(goTool(), args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("lambdart: go build %s: %v\n%s", pkg, err, out)
	}
	watchSources(t, root, pkg)
	bootstrap := filepath.Join(dir, "bootstrap")
	if err := os.Rename(tmp.Name(), bootstrap); err != nil {
		t.Fatalf("lambdart: %v", err)
	}
	buildCache[pkg] = bootstrap
	return bootstrap
}

// ModuleRoot returns the folder of the go.mod above the working directory.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// watchSources stats every source file of the module that pkg is built
// from. go test records the files a test stats in its cache key, so a
// cached pass is not reused after the function's code changed, even when
// the test's own package does not import it.
func watchSources(t testing.TB, root, pkg string) {
	const format = `{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}
{{end}}{{end}}{{end}}`
	cmd := exec.Command(goTool(), "list", "-deps", "-f", format, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lambdart: go list %s: %v", pkg, err)
	}
	for _, f := range append(strings.Split(string(out), "\n"), filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum")) {
		if f != "" {
			os.Stat(f)
		}
	}
}
