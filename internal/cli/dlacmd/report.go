package dlacmd

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/report"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/triage"
)

// ReportOptions are dla report's inputs.
type ReportOptions struct {
	Factory *Factory
	Select  selectFlags
	Out     string
	Title   string
}

// NewCmdReport builds `dla report`.
func NewCmdReport(f *Factory) *cobra.Command {
	opts := &ReportOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "report --out FILE [flags]",
		Short: "Write a self-contained HTML report of the selection: when, which errors, which collections",
		Long: `Write one HTML file that shows the shape of a failure before its records:
objects per day stacked by error class, the error classes with an example of
each, the objects by collection and by workflow, the granules in the most
objects, sqs/ against failed-sqs/ per day, and the unreadable objects with
their reasons. Every chart has its numbers in a table beside it, and every key
shown links to the 'dla show' command that opens it.

The selection flags are those of 'dla search'. The file has its CSS and SVG
inline and no script: it makes no network request, opens from disk, and can
be attached to a ticket. --out - writes it to stdout.`,
		Example: `  dla report --archive s3://bucket/stack --from 2024-03-01 --out report.html
  dla report --archive testdata/archive/demo --out - > report.html`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Out == "" {
				return cmdutil.UsageErrorf("--out is required (a file, or - for stdout)")
			}
			return runReport(cmd.Context(), opts)
		},
	}
	opts.Select.register(cmd)
	cmd.Flags().StringVar(&opts.Out, "out", "", "the HTML file to write (- for stdout)")
	cmd.Flags().StringVar(&opts.Title, "title", "", "the report's title (default: the archive and the date)")
	return cmd
}

func runReport(ctx context.Context, opts *ReportOptions) error {
	f := opts.Factory
	scope, loc, store, err := opts.Select.open(ctx, f)
	if err != nil {
		return err
	}
	if err := outsideArchive(loc, opts.Out); err != nil {
		return err
	}
	progress := cmdutil.NewProgress(f.IO.ErrOut, f.IO.ShowProgress())
	r := report.NewDLA()
	tr := triage.New()
	failed := scope.Area == dla.AreaFailed
	st, err := selection.Run(ctx, store, scope, opts.Select.concurrency, func(res selection.Result) error {
		if err := stopOnAuth(res); err != nil {
			return err
		}
		if res.Unreadable() {
			r.AddUnreadable(res.Entry.Key, res.Err.Error())
			tr.AddUnreadable(res.Entry.Key, scope.Layout.ParseKey(res.Entry.Key).Date)
			return nil
		}
		class := dla.ErrorClass(res.Decoded.Error) // once per object: the report and triage group by it
		r.Add(res.Decoded, class)
		tr.AddClassed(res.Decoded, class)
		r.AddArea(res.Decoded.Date(), failed)
		progress.Update("report: %d objects", r.Objects())
		return nil
	})
	if err != nil {
		progress.Clear()
		return err
	}
	// The other area, counted by day for the sqs/ against failed-sqs/ chart.
	other := scope
	other.Area, other.Limit = dla.AreaFailed, 0
	if failed {
		other.Area = dla.AreaSQS
	}
	otherSt, err := selection.Run(ctx, store, other, opts.Select.concurrency, func(res selection.Result) error {
		if err := stopOnAuth(res); err != nil {
			return err
		}
		if !res.Unreadable() {
			r.AddArea(res.Decoded.Date(), !failed)
		}
		return nil
	})
	progress.Clear()
	if err != nil {
		return err
	}
	now := f.Now().UTC()
	title := opts.Title
	if title == "" {
		title = fmt.Sprintf("Dead Letter Archive report: %s", loc)
	}
	sel := selectionText(opts.Select)
	subtitle := []string{
		fmt.Sprintf("%s, %s matched (%s read, %d unreadable)", loc, output.Plural(st.Matched, "object"), output.Plural(st.Listed, "object"), st.Unreadable),
		fmt.Sprintf("Selection: %s; %s also read from %s", sel, output.Plural(otherSt.Listed, "object"), other.Area),
	}
	// The page's commands are run from wherever it is read (a ticket, a
	// browser): a local archive is named by its absolute path, never the
	// --archive given relative to this directory.
	archiveArg := cmp.Or(opts.Select.value, f.Getenv("DLA_ARCHIVE"), loc.String())
	if loc.Bucket == "" {
		archiveArg = loc.String() // ParseLocation made it absolute
	}
	page := report.DLAPage(r.Data(), title, subtitle, report.NewLinks("dla", archiveArg, scope.Layout.Root()))
	page.Sections = append([]report.Section{report.TriageSection(triageRows(tr, triageCommand{f: f, sel: &opts.Select, archive: archiveArg}),
		"Readiness is not checked here: 'dla triage --database-url' (or --db-secret) asks the database whether what a fix-first group needs exists now.")}, page.Sections...)
	page.Generated = now.Format("2006-01-02 15:04:05Z") + " by dla report"
	var buf bytes.Buffer
	if err := report.Write(&buf, page); err != nil {
		return err
	}
	if err := writeOut(f, opts.Out, buf.Bytes()); err != nil {
		return err
	}
	if opts.Out != "-" {
		fmt.Fprintf(f.IO.ErrOut, "wrote %s: %s, %d unreadable\n", opts.Out, output.Plural(st.Matched, "object"), st.Unreadable)
	}
	return nil
}

// selectionText describes the selection flags for the report's subtitle.
func selectionText(s selectFlags) string {
	words := s.args(true)
	if len(words) == 0 {
		return "every object"
	}
	return shellword.Join(words...)
}

// writeOut writes a whole file atomically, or to stdout for "-".
func writeOut(f *Factory, path string, data []byte) error {
	if path == "-" {
		_, err := f.IO.Out.Write(data)
		return err
	}
	return cmdutil.WriteFileAtomic(path, data)
}

// outsideArchive refuses an --out inside a local archive: the page would
// replace an archived object, or be read back as an unreadable one.
func outsideArchive(loc archive.Location, out string) error {
	if loc.Bucket != "" || out == "-" {
		return nil
	}
	dir, err := filepath.Abs(filepath.Join(loc.Dir, loc.Stack))
	if err != nil {
		return err
	}
	file, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(file)); err == nil {
		file = filepath.Join(real, filepath.Base(file))
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	if rel, err := filepath.Rel(dir, file); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return cmdutil.UsageErrorf("--out %s is inside the archive %s; write the report elsewhere", out, filepath.Join(loc.Dir, loc.Stack))
	}
	return nil
}
