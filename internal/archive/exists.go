package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// NoArchiveError says that nothing is stored under a stack's
// dead-letter-archive/, and which stacks of the bucket do have an archive.
type NoArchiveError struct {
	Where  string   // s3://bucket/stack
	Stacks []string // stacks in the same bucket with a dead-letter-archive/
	More   bool     // the bucket had more top-level folders than were looked at
}

func (e *NoArchiveError) Error() string {
	msg := fmt.Sprintf("no archive at %s: nothing under %s/dead-letter-archive/ (is the stack name right? A fully recovered archive looks like this too)",
		e.Where, strings.TrimSuffix(e.Where, "/"))
	switch {
	case len(e.Stacks) > 0:
		msg += "; stacks in this bucket with an archive: " + strings.Join(e.Stacks, ", ")
	case e.More:
		msg += "; none of the first top-level folders of the bucket holds one"
	default:
		msg += "; no stack in this bucket holds one"
	}
	return msg
}

var errFound = errors.New("found")

// maxStackProbe bounds the top-level folders RequireArchive looks into.
const maxStackProbe = 200

// hasAny reports whether anything is listed under prefix (one short list).
func hasAny(ctx context.Context, s Store, prefix string) (bool, error) {
	err := s.List(ctx, prefix, true, func(Entry) error { return errFound })
	if errors.Is(err, errFound) {
		return true, nil
	}
	return false, err
}

// RequireArchive checks that something is stored under
// "<stack>/dead-letter-archive/" in s (a whole bucket, not contained), so
// that a mistyped stack is an error rather than an empty archive. When there
// is nothing, the error is a *NoArchiveError naming the stacks that have one.
func RequireArchive(ctx context.Context, s Store, stack string) error {
	ok, err := hasAny(ctx, s, stack+"/dead-letter-archive/")
	if ok || err != nil {
		return err
	}
	e := &NoArchiveError{Where: s.String() + "/" + stack}
	var folders []string
	err = s.List(ctx, "", true, func(en Entry) error {
		if !en.IsPrefix {
			return nil
		}
		if len(folders) == maxStackProbe {
			e.More = true
			return errFound
		}
		folders = append(folders, en.Key)
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return err
	}
	for _, f := range folders {
		if ok, err := hasAny(ctx, s, f+"dead-letter-archive/"); err != nil {
			return err
		} else if ok {
			e.Stacks = append(e.Stacks, strings.TrimSuffix(f, "/"))
		}
	}
	return e
}
