package apirecover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
)

// A --via-api run moves its selection into recover-staging/<run>/ before
// Cumulus reads it. A run killed during staging would leave those objects
// where no verb lists them (search, stats and recover read sqs/ and
// failed-sqs/). So the run writes a manifest beside its folder before the
// first object moves (recover-staging/<run>.json: the API, the archive,
// when, how many), and every verb that opens the archive warns while a
// staging folder holds objects (Unfinished), with the command that brings
// them back.

// Manifest is what a --via-api run records of its staging folder.
type Manifest struct {
	Type     string    `json:"type"` // "recover_staging"
	Staging  string    `json:"staging"`
	API      string    `json:"api"`
	Archive  string    `json:"archive"`
	Created  time.Time `json:"created"`
	Selected int       `json:"selected"`
}

// ManifestKey is the manifest of a staging folder: beside it, not in it
// (Cumulus recovers everything under the folder).
func ManifestKey(staging string) string { return strings.TrimSuffix(staging, "/") + ".json" }

// WriteManifest records the staging folder before anything moves into it.
func WriteManifest(ctx context.Context, store archive.Store, m Manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := store.Put(ctx, ManifestKey(m.Staging), b); err != nil {
		return fmt.Errorf("recording the staging folder %s: %w (nothing was staged)", m.Staging, err)
	}
	return nil
}

// DropManifest removes the manifest once its folder holds nothing.
func DropManifest(ctx context.Context, store archive.Store, staging string) {
	empty := true
	_ = store.List(ctx, staging, false, func(archive.Entry) error {
		empty = false
		return errStop
	})
	if empty {
		_ = store.Delete(ctx, ManifestKey(staging))
	}
}

var errStop = errors.New("stop")

// StagingCountCap bounds the objects counted in one staging folder.
const StagingCountCap = 100000

// UnfinishedRun is a staging folder that holds objects: a --via-api run
// that did not finish.
type UnfinishedRun struct {
	Staging string
	// Objects is how many it holds, StagingCountCap+1 when it holds more
	// than StagingCountCap (More).
	Objects int
	More    bool
	// API is the Cumulus API its manifest names, when that is a plain
	// http(s) URL (a manifest is archive content, and its API is printed
	// in a command to run); "" otherwise.
	API string
}

// Unfinished lists the archive's staging folders that hold objects, in
// order: only those --cleanup-staging takes (a run's folder, not one whose
// name starts with "."), since a warning whose command would be refused
// helps nobody. Its error is the listing's.
func Unfinished(ctx context.Context, store archive.Store, layout dla.Layout) ([]UnfinishedRun, error) {
	base := layout.Root() + StagingFolder
	folders := map[string]bool{}
	manifests := map[string]bool{}
	err := store.List(ctx, base, true, func(e archive.Entry) error {
		switch {
		case e.IsPrefix:
			folders[e.Key] = true
		case strings.HasSuffix(e.Key, ".json"):
			manifests[strings.TrimSuffix(e.Key, ".json")+"/"] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	runs := make([]string, 0, len(folders))
	for f := range folders {
		if strings.HasPrefix(strings.TrimPrefix(f, base), ".") {
			continue
		}
		runs = append(runs, f)
	}
	sort.Strings(runs)
	var out []UnfinishedRun
	for _, run := range runs {
		n := 0
		_ = store.List(ctx, run, false, func(archive.Entry) error {
			n++
			if n > StagingCountCap {
				return errStop
			}
			return nil
		})
		if n == 0 {
			continue
		}
		u := UnfinishedRun{Staging: run, Objects: n, More: n > StagingCountCap}
		if manifests[run] {
			if b, err := store.Get(ctx, ManifestKey(run)); err == nil {
				var m Manifest
				if json.Unmarshal(b, &m) == nil && plainURL(m.API) {
					u.API = m.API
				}
			}
		}
		out = append(out, u)
	}
	return out, nil
}

// plainURL: an http(s) URL with nothing a terminal or a shell would read
// as more than a URL.
func plainURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("'\"`$;|&<>()\\", r) {
			return false
		}
	}
	return true
}
