package dlacmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --out is any path, including one inside the local archive the
// report reads. Pointing it at an archived object (a slip of tab
// completion: --out demo/dead-letter-archive/sqs/2024-03-05/<key>)
// atomically replaces that record with the HTML page: the record is gone.
// Pointing it at a new name inside a date folder adds an HTML "object" the
// next search reports as unreadable (exit 3). dla report should refuse an
// --out inside the archive it reads.
// DEFECT (report.go writeOut: no check of --out against the archive).
func TestReportRefusesOutInsideTheArchive(t *testing.T) {
	for _, target := range []string{"existing", "new"} {
		t.Run(target, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(filepath.Join(dir, "demo"), os.DirFS(sampleArchive)); err != nil {
				t.Fatal(err)
			}
			archiveDir := filepath.Join(dir, "demo")
			folder := filepath.Join(archiveDir, "dead-letter-archive", "sqs", "2024-03-05")
			victim := filepath.Join(folder, "dcb6deb2-8893-413d-aaa9-652d72007bb8-da031405-3b3c-4201-b4de-7ff3be57a02d")
			before, err := os.ReadFile(victim)
			if err != nil {
				t.Fatal(err)
			}
			out := victim
			if target == "new" {
				out = filepath.Join(folder, "report.html")
			}
			r := run(t, false, nil, "", "report", "--archive", archiveDir, "--date", "2024-03-05", "--out", out, "--ignore-unreadable")
			t.Logf("report: exit %d, %s", r.code, r.stderr)
			after, err := os.ReadFile(victim)
			if err != nil || string(after) != string(before) {
				t.Fatalf("dla report --out %s replaced the archived record (exit %d); it now starts %q", out, r.code, string(after[:min(len(after), 40)]))
			}
			s := run(t, false, nil, "", "search", "--archive", archiveDir, "--date", "2024-03-05", "-o", "keys")
			if s.code != 0 || strings.Contains(s.stderr, "report.html") {
				t.Fatalf("after dla report --out %s, search of the archive exits %d: %s", out, s.code, s.stderr)
			}
		})
	}
}
