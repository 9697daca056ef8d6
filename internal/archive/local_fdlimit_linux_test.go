package archive

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestLocalScanOutOfDescriptorsGivesErrorsNamingKeysNeverOtherBytes: a scan
// of 16 goroutines listing and reading 80 folders with the descriptor
// limit far below what the folders kept open want (a child process with
// RLIMIT_NOFILE of 16 to 60) reads each object's own bytes or fails with
// an error naming its key: a descriptor that failed to open is never taken
// for a folder, and a folder's descriptor is never closed under a read.
func TestLocalScanOutOfDescriptorsGivesErrorsNamingKeysNeverOtherBytes(t *testing.T) {
	if lim := os.Getenv("DLA_TEST_NOFILE"); lim != "" {
		scanWithDescriptorLimit(t, lim)
		return
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	for _, lim := range []string{"16", "24", "40", "60"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLocalScanOutOfDescriptorsGivesErrorsNamingKeysNeverOtherBytes$", "-test.v")
		cmd.Env = append(os.Environ(), "DLA_TEST_NOFILE="+lim)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("with %s descriptors: %v\n%s", lim, err, out)
		}
	}
}

func scanWithDescriptorLimit(t *testing.T, lim string) {
	ctx := context.Background()
	dir := t.TempDir()
	top := "demo/dead-letter-archive"
	WriteDateFolders(t, filepath.Join(dir, top, "sqs"), 80, 3, func(date string, j int) []byte {
		return []byte(top + "/sqs/" + date + "/o" + fmt.Sprint(j)) // its key
	})
	l, err := NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	var n uint64
	fmt.Sscan(lim, &n)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: old.Max}); err != nil {
		t.Skip(err)
	}
	var mu sync.Mutex
	var problems []string
	ok, failed := 0, 0
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				_ = l.List(ctx, top+"/sqs/", false, func(e Entry) error { // a listing may fail: out of descriptors
					b, err := l.GetInto(ctx, e.Key, nil)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err != nil && !strings.Contains(err.Error(), e.Key):
						problems = append(problems, fmt.Sprintf("%s: an error not naming it: %v", e.Key, err))
					case err != nil:
						failed++
					case string(b) != e.Key:
						problems = append(problems, fmt.Sprintf("%s: read %q", e.Key, b))
					default:
						ok++
					}
					return nil
				})
			}
		}()
	}
	wg.Wait()
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Error(err)
	}
	t.Logf("%s descriptors: %d read, %d refused", lim, ok, failed)
	for i, p := range problems {
		if i == 10 {
			break
		}
		t.Error(p)
	}
}
