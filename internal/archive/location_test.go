package archive

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseLocation(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "one", "demo", "dead-letter-archive", "sqs"), 0o755)
	os.MkdirAll(filepath.Join(root, "two", "a", "dead-letter-archive"), 0o755)
	os.MkdirAll(filepath.Join(root, "two", "b", "dead-letter-archive"), 0o755)
	os.MkdirAll(filepath.Join(root, "none", "x"), 0o755)
	stack := Location{Dir: filepath.Join(root, "one"), Stack: "demo"}
	for _, c := range []struct {
		spec string
		want Location
		err  string
	}{
		{spec: "s3://bucket/my-stack/", want: Location{Bucket: "bucket", Stack: "my-stack"}},
		{spec: "s3://bucket", err: "want s3://BUCKET/STACK"},
		{spec: "gs://bucket/stack", err: "only s3://"},
		{spec: "", err: "no archive given"},
		{spec: filepath.Join(root, "one", "demo"), want: stack},
		{spec: filepath.Join(root, "one", "demo", "dead-letter-archive"), want: stack},
		{spec: filepath.Join(root, "one"), want: stack},
		{spec: filepath.Join(root, "two"), err: "several stacks (a, b)"},
		{spec: filepath.Join(root, "none"), err: "no dead-letter-archive folder"},
		{spec: filepath.Join(root, "missing"), err: "no such file"},
	} {
		got, err := ParseLocation(c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
	}
}
