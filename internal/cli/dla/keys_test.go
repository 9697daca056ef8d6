package dla

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

func TestResolveKey(t *testing.T) {
	dir, _ := filepath.Abs("testdata")
	local := archive.Location{Dir: dir, Stack: "demo"}
	layout := dla.Layout{Stack: "demo"}
	full := "demo/dead-letter-archive/sqs/2024-03-02/exec-uuid"
	for _, c := range []struct {
		loc  archive.Location
		in   string
		want string
	}{
		{local, full, full},
		{local, "dead-letter-archive/sqs/2024-03-02/exec-uuid", full},
		{local, "sqs/2024-03-02/exec-uuid", full},
		{local, "failed-sqs/2024-03-02/exec-uuid", "demo/dead-letter-archive/failed-sqs/2024-03-02/exec-uuid"},
		{local, "s3://bucket/" + full, full},
		{local, filepath.Join(dir, filepath.FromSlash(full)), full},
		{local, "./testdata/" + full, full},
		{archive.Location{Bucket: "b", Stack: "demo"}, "sqs/2024-03-02/exec-uuid", full},
	} {
		if got := resolveKey(c.loc, layout, c.in); got != c.want {
			t.Errorf("resolveKey(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReadKeys(t *testing.T) {
	keys, err := readKeys(strings.NewReader("a\n\n# a comment\n  b  \n"), []string{"x", "-", "y"})
	if err != nil || !slices.Equal(keys, []string{"x", "a", "b", "y"}) {
		t.Errorf("keys = %q, %v", keys, err)
	}
	if _, err := readKeys(strings.NewReader(""), []string{"-"}); err == nil {
		t.Error("empty stdin must be a usage error")
	}
}

func TestParseDate(t *testing.T) {
	now := time.Date(2024, 3, 1, 0, 30, 0, 0, time.FixedZone("ahead", 2*3600)) // still Feb 29 in UTC
	for in, want := range map[string]string{"today": "2024-02-29", "Yesterday": "2024-02-28", "2024-01-31": "2024-01-31"} {
		if got, err := parseDate("--date", in, now); err != nil || got != want {
			t.Errorf("parseDate(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := parseDate("--date", "2024-1-31", now); err == nil {
		t.Error("2024-1-31 must be refused")
	}
}
