package dlacmd

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
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/workflow/apirecover"
)

// A --via-api run moves its selection into recover-staging/<run>/ before
// Cumulus reads it. A run killed during staging would leave those objects
// where no verb lists them (search, stats and recover read sqs/ and
// failed-sqs/). So the run writes a manifest beside its folder before the
// first object moves (recover-staging/<run>.json: the API, the archive,
// when, how many), and every verb that opens the archive warns while a
// staging folder holds objects, with the command that brings them back.

// StagingManifest is what a --via-api run records of its staging folder.
type StagingManifest struct {
	Type     string    `json:"type"` // "recover_staging"
	Staging  string    `json:"staging"`
	API      string    `json:"api"`
	Archive  string    `json:"archive"`
	Created  time.Time `json:"created"`
	Selected int       `json:"selected"`
}

// manifestKey is the manifest of a staging folder: beside it, not in it
// (Cumulus recovers everything under the folder).
func manifestKey(staging string) string { return strings.TrimSuffix(staging, "/") + ".json" }

// writeManifest records the staging folder before anything moves into it.
func writeManifest(ctx context.Context, store archive.Store, m StagingManifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := store.Put(ctx, manifestKey(m.Staging), b); err != nil {
		return fmt.Errorf("recording the staging folder %s: %w (nothing was staged)", m.Staging, err)
	}
	return nil
}

// dropManifest removes the manifest once its folder holds nothing.
func dropManifest(ctx context.Context, store archive.Store, staging string) {
	empty := true
	_ = store.List(ctx, staging, false, func(archive.Entry) error {
		empty = false
		return errStop
	})
	if empty {
		_ = store.Delete(ctx, manifestKey(staging))
	}
}

var errStop = errors.New("stop")

// stagingCountCap bounds the objects counted in one staging folder.
const stagingCountCap = 100000

// dlaCommand is "dla VERB" with this invocation's archive and AWS flags
// (--profile, --region, --endpoint-url: triage's next commands are built
// by the same triageCommand.base) and words, each quoted for bash and zsh:
// a command printed for the operator runs as printed and reaches the same
// archive, whatever its stack's name holds and however the endpoint was
// given.
func dlaCommand(f *Factory, archiveArg, verb string, words ...string) string {
	return shellword.Join(append(triageCommand{f: f, archive: archiveArg}.base(verb), words...)...)
}

// cleanupStagingCommand is the command that moves what is in a staging
// folder back to its keys.
func cleanupStagingCommand(f *Factory, archiveArg, api, staging string) string {
	return dlaCommand(f, archiveArg, "recover", "--via-api", api, "--cleanup-staging", staging)
}

// warnStaging warns on stderr about each staging folder of the archive
// that holds objects: a --via-api run that did not finish, and the command
// that moves them back. archiveArg is the archive as the operator names
// it.
func warnStaging(ctx context.Context, f *Factory, store archive.Store, layout dla.Layout, archiveArg string) {
	w := f.IO.ErrOut
	base := layout.Root() + apirecover.StagingFolder
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
		return // a warning only: the verb reports its own listing errors
	}
	runs := make([]string, 0, len(folders))
	for f := range folders {
		// Only what --cleanup-staging takes (a run's folder): a warning
		// whose command would be refused helps nobody.
		if strings.HasPrefix(strings.TrimPrefix(f, base), ".") {
			continue
		}
		runs = append(runs, f)
	}
	sort.Strings(runs)
	for _, run := range runs {
		n := 0
		_ = store.List(ctx, run, false, func(archive.Entry) error {
			n++
			if n > stagingCountCap {
				return errStop
			}
			return nil
		})
		if n == 0 {
			continue
		}
		count := output.Plural(n, "object")
		if n > stagingCountCap {
			count = fmt.Sprintf("more than %d objects", stagingCountCap)
		}
		api := "URL"
		if manifests[run] {
			if b, err := store.Get(ctx, manifestKey(run)); err == nil {
				var m StagingManifest
				if json.Unmarshal(b, &m) == nil && plainURL(m.API) {
					api = m.API
				}
			}
		}
		fmt.Fprintf(w, "dla: warning: %s in %s, staged by a recover --via-api that did not finish (no other verb sees them);\n"+
			"  once no Cumulus operation is working on them, move them back with: %s\n",
			count, output.OneLine(run), cleanupStagingCommand(f, archiveArg, api, run))
	}
}

// plainURL: an http(s) URL with nothing a terminal or a shell would read
// as more than a URL (a manifest is archive content, and its API is
// printed in a command to run).
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
