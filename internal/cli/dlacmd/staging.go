package dlacmd

import (
	"context"
	"fmt"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/workflow/apirecover"
)

// A --via-api run records its staging folder in a manifest before the
// first object moves (apirecover.WriteManifest), and every verb that
// opens the archive warns while a staging folder holds objects
// (apirecover.Unfinished), with the command that brings them back.

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
	runs, err := apirecover.Unfinished(ctx, store, layout)
	if err != nil {
		return // a warning only: the verb reports its own listing errors
	}
	for _, run := range runs {
		count := output.Plural(run.Objects, "object")
		if run.More {
			count = fmt.Sprintf("more than %d objects", apirecover.StagingCountCap)
		}
		api := run.API
		if api == "" {
			api = "URL"
		}
		fmt.Fprintf(f.IO.ErrOut, "dla: warning: %s in %s, staged by a recover --via-api that did not finish (no other verb sees them);\n"+
			"  once no Cumulus operation is working on them, move them back with: %s\n",
			count, output.OneLine(run.Staging), cleanupStagingCommand(f, archiveArg, api, run.Staging))
	}
}
