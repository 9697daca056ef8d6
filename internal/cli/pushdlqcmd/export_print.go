package pushdlqcmd

import (
	"fmt"

	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/workflow/pushexport"
)

// exportStopped ends an export that stopped before its file was
// committed. The partial file is kept, never removed: once a round was
// deleted it is the only copy of those messages, and the operator is told
// how many, and the command that finishes the export (--resume). A failed
// delete (exit 3) writes the summary, which then names the partial file;
// any other stop exits with its error's code.
func exportStopped(f *Factory, opts *ExportOptions, out *pushexport.File, sum *ExportSummary, err error, stdoutGone bool) error {
	out.Abort()
	w := f.IO.ErrOut
	finish := func() {
		if !opts.Delete {
			fmt.Fprintf(w, "finish the export (once nothing of the DLQ is in flight, the messages not in %s are appended; nothing is deleted) with:\n  %s\n",
				out.Partial, exportResumeCommand(f, opts, false))
			return
		}
		fmt.Fprintf(w, "finish the export (the lines of %s still in the DLQ are deleted from it and not written again, the rest of the DLQ is appended, every message ends in exactly one place) with:\n  %s\n",
			out.Partial, exportResumeCommand(f, opts, opts.Delete))
	}
	switch {
	case out.Final == "-" && stdoutGone:
		// A reader that went away (`export --out - | head -1`): stop
		// printing; the deferred close releases every message (--delete
		// needs a file: nothing was deleted).
		return stoppedError("nothing was deleted; every message is released")
	case out.Final == "-":
		fmt.Fprintln(w, "export stopped: nothing was deleted; every message is released")
	case sum.Deleted == 0 && out.Resumed() == 0:
		fmt.Fprintf(w, "export stopped: nothing was deleted; the messages read so far are in %s\n", out.Partial)
		finish()
	case sum.Deleted == 0 && !opts.Delete:
		fmt.Fprintf(w, "export stopped: nothing was deleted; %s holds %s (keep it: if the export that left it ran with --delete, it is the only copy of the messages that export deleted)\n",
			out.Partial, output.Plural(sum.Exported, "message"))
		finish()
	default:
		if out.Resumed() == 0 {
			fmt.Fprintf(w, "export stopped: %s deleted from the DLQ, each once its line was synced to %s; keep that file, it is their only copy. "+
				"It holds %s more, which were not deleted (they stay in the DLQ); the rest of the DLQ was not read\n",
				map[bool]string{true: "1 message was", false: fmt.Sprintf("%d messages were", sum.Deleted)}[sum.Deleted == 1],
				out.Partial, output.Plural(sum.Exported-sum.Deleted, "message"))
		} else {
			fmt.Fprintf(w, "export stopped: this run deleted %s from the DLQ, each once its line was synced to %s; keep that file: it holds %s, and is the only copy of those no longer in the DLQ\n",
				output.Plural(sum.Deleted, "message"), out.Partial, output.Plural(sum.Exported, "message"))
		}
		finish()
	}
	if out.Final != "-" {
		// The summary (exit 3) names what holds the messages.
		sum.File, sum.Bytes = out.Partial, out.Bytes()
		digest := out.Digest()
		sum.SHA256 = &digest
	}
	return err
}

// writeExportSummary writes the summary record: on stdout, or on stderr
// when stdout holds the export itself.
func writeExportSummary(f *Factory, opts *ExportOptions, s ExportSummary) error {
	w := f.IO.Out
	if opts.Out == "-" {
		w = f.IO.ErrOut // stdout holds the export itself
	}
	if opts.Output.Value == "json" {
		return output.WriteJSON(w, s)
	}
	digest := ""
	if s.SHA256 != nil {
		digest = *s.SHA256
	}
	_, err := fmt.Fprintf(w, "exported  %s (%d bytes) to %s\nsha256    %s\ndeleted   %d (failed %d)\nreleased  %d (failed %d)\n",
		output.Plural(s.Exported, "message"), s.Bytes, s.File, digest, s.Deleted, s.DeleteFailed, s.Released, s.ReleaseFailed)
	return err
}
