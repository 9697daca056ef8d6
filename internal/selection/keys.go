package selection

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// KeyError is a key an operator named that cannot be taken as the
// archive's (a usage error for the CLI).
type KeyError struct{ msg string }

func (e *KeyError) Error() string { return e.msg }

// ResolveKey accepts the ways an operator may name an object: a key, a key
// relative to the archive, an s3:// URL, or for a local archive the path
// of a file inside it (absolute, or relative to the current directory).
func ResolveKey(loc archive.Location, layout dla.Layout, k string) string {
	if rest, ok := strings.CutPrefix(k, "s3://"); ok {
		_, key, _ := strings.Cut(rest, "/")
		return key
	}
	if loc.Dir != "" && (filepath.IsAbs(k) || strings.HasPrefix(k, ".")) {
		if key, ok := localKey(loc, k); ok {
			return key
		}
	}
	switch {
	case strings.HasPrefix(k, layout.Root()):
		return k
	case strings.HasPrefix(k, "dead-letter-archive/"):
		return loc.Stack + "/" + k
	case strings.HasPrefix(k, "sqs/") || strings.HasPrefix(k, "failed-sqs/"):
		return layout.Root() + k
	}
	// Any other relative path to a file inside the archive, such as
	// archive/demo/dead-letter-archive/sqs/2024-03-02/x or, from inside
	// a date folder, the file's name.
	if loc.Dir != "" {
		if _, err := os.Lstat(k); err == nil {
			if key, ok := localKey(loc, k); ok {
				return key
			}
		}
	}
	return k
}

// ResolveKeys resolves every key named (ResolveKey). An s3:// URL must name
// the archive's own bucket: another bucket's object is not the archive's,
// and must not be taken for the one of the same key in the archive.
func ResolveKeys(loc archive.Location, layout dla.Layout, keys []string) ([]string, error) {
	seen := make(map[string]bool, len(keys))
	kept := keys[:0]
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, "s3://"); ok {
			if bucket, _, _ := strings.Cut(rest, "/"); bucket != loc.Bucket {
				return nil, &KeyError{fmt.Sprintf("%s is not in the archive %s: name keys of the archive's own bucket", k, loc)}
			}
		}
		// A relative path that is a file here, outside the archive, and
		// also reads as a key of the archive (sqs/..., from inside another
		// copy of it) is ambiguous: the operator means one or the other.
		archiveForm := strings.HasPrefix(k, layout.Root()) || strings.HasPrefix(k, "dead-letter-archive/") ||
			strings.HasPrefix(k, "sqs/") || strings.HasPrefix(k, "failed-sqs/")
		if loc.Dir != "" && archiveForm {
			if _, err := os.Lstat(k); err == nil {
				if _, inside := localKey(loc, k); !inside {
					return nil, &KeyError{fmt.Sprintf("%s is a file here, outside the archive %s, and a key of the archive: give the full key (%s...) or a path inside the archive", k, loc, layout.Root())}
				}
			}
		}
		// A key named twice (in two forms, or from two piped lists) is
		// one object: handled once.
		if key := ResolveKey(loc, layout, k); !seen[key] {
			seen[key] = true
			kept = append(kept, key)
		}
	}
	return kept, nil
}

// localKey is the key of the local path p when it lies inside the
// archive's folder.
func localKey(loc archive.Location, p string) (string, bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(loc.Dir, abs)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
