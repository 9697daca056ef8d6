package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Location is where an archive lives: a bucket or a local directory, and the
// stack whose "<stack>/dead-letter-archive/" it is.
type Location struct {
	Bucket string // set for s3://BUCKET/STACK
	Dir    string // set for a local directory: the folder holding the stack folder
	Stack  string
}

func (l Location) String() string {
	if l.Bucket != "" {
		return "s3://" + l.Bucket + "/" + l.Stack
	}
	return filepath.Join(l.Dir, l.Stack)
}

// ParseLocation reads an --archive value: s3://BUCKET/STACK, or a local
// path to the stack folder (the one that holds dead-letter-archive/), or to
// a folder holding exactly one such stack folder.
func ParseLocation(spec string) (Location, error) {
	if spec == "" {
		return Location{}, fmt.Errorf("no archive given: pass --archive s3://BUCKET/STACK or --archive PATH/TO/STACK, or set DLA_ARCHIVE")
	}
	if rest, ok := strings.CutPrefix(spec, "s3://"); ok {
		bucket, stack, _ := strings.Cut(rest, "/")
		stack = strings.Trim(stack, "/")
		if bucket == "" || stack == "" {
			return Location{}, fmt.Errorf("archive %q: want s3://BUCKET/STACK (the stack is the folder that holds dead-letter-archive/)", spec)
		}
		return Location{Bucket: bucket, Stack: stack}, nil
	}
	if strings.Contains(spec, "://") {
		return Location{}, fmt.Errorf("archive %q: only s3:// URLs and local paths are supported", spec)
	}
	dir := filepath.Clean(spec)
	// The folder named is the operator's choice, links and all; below it,
	// the local store follows no link.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if base := filepath.Base(dir); base == "dead-letter-archive" {
		dir = filepath.Dir(dir)
	}
	if st, err := os.Stat(dir); err != nil {
		return Location{}, fmt.Errorf("archive %q: %w", spec, err)
	} else if !st.IsDir() {
		return Location{}, fmt.Errorf("archive %q is not a directory", spec)
	}
	if isDir(filepath.Join(dir, "dead-letter-archive")) {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return Location{}, err
		}
		return Location{Dir: filepath.Dir(abs), Stack: filepath.Base(abs)}, nil
	}
	entries, _ := os.ReadDir(dir)
	var stacks []string
	for _, e := range entries {
		if e.IsDir() && isDir(filepath.Join(dir, e.Name(), "dead-letter-archive")) {
			stacks = append(stacks, e.Name())
		}
	}
	switch len(stacks) {
	case 1:
		abs, err := filepath.Abs(dir)
		if err != nil {
			return Location{}, err
		}
		return Location{Dir: abs, Stack: stacks[0]}, nil
	case 0:
		return Location{}, fmt.Errorf("archive %q: no dead-letter-archive folder in it or in a folder below it", spec)
	default:
		return Location{}, fmt.Errorf("archive %q holds several stacks (%s): name one", spec, strings.Join(stacks, ", "))
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
