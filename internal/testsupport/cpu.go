package testsupport

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the user and system CPU this process has used so far, for
// benchmarks that report CPU per item.
func ProcessCPU(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
