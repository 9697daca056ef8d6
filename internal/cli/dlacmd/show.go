package dlacmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"
	"github.com/tidwall/gjson"
	"github.com/tidwall/pretty"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/jsontext"
	"github.com/deadletter/deadletter/internal/selection"
)

// ShowOptions are dla show's inputs.
type ShowOptions struct {
	Factory          *Factory
	Archive          archiveFlag
	Keys             []string
	Output           *cmdutil.Output
	IgnoreUnreadable bool
	Null             bool // keys on stdin are NUL-separated
}

// NewCmdShow builds `dla show`.
func NewCmdShow(f *Factory) *cobra.Command {
	opts := &ShowOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "show KEY... | -",
		Short: "Show archive objects fully decoded, layer by layer",
		Long: `Show everything in archive objects, decoded layer by layer: the SQS metadata
(outer layers win, as in Cumulus), the hoisted fields, the EventBridge event,
the Step Functions detail and the Cumulus message, pretty-printed.

KEY is an object key (demo/dead-letter-archive/sqs/2024-03-02/exec-uuid), a
key relative to the archive (sqs/2024-03-02/exec-uuid), an s3:// URL, or, for
a local archive, the path of the file (absolute or relative to the current
directory; it must lie inside the archive). '-' reads keys from stdin, one
per line, so 'dla search -o keys' can feed it.

-o json gives a JSON array with one decoded structure per object, every layer
parsed.`,
		Example: `  dla show --archive s3://bucket/stack sqs/2024-03-02/0e1be317-0d83-453a-bf67-65c3826f4fc5-2c0b6b6e-8f7e-4b5c-9a40-5f4c1b8b9d11
  dla search --date 2024-03-02 --status FAILED -o keys | dla show -`,
		Args: cmdutil.UsageArgs(func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("show needs an archive key, e.g. dla show sqs/2024-03-02/EXECUTION-MESSAGE (as dla search prints it), or - to read keys from stdin (dla search … -o keys | dla show -)")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			opts.Keys = args
			return runShow(cmd.Context(), opts)
		},
	}
	opts.Archive.register(cmd)
	cmd.Flags().BoolVar(&opts.IgnoreUnreadable, "ignore-unreadable", false, "do not exit 3 when an object cannot be read or decoded")
	addNullFlag(cmd, &opts.Null)
	opts.Output = cmdutil.AddOutputFlag(cmd, "text", "json")
	return cmd
}

func runShow(ctx context.Context, opts *ShowOptions) error {
	f := opts.Factory
	loc, err := opts.Archive.location(f)
	if err != nil {
		return err
	}
	keys, err := readKeys(f.IO.In, opts.Keys, opts.Null)
	if err != nil {
		return err
	}
	layout := dla.Layout{Stack: loc.Stack}
	if keys, err = selection.ResolveKeys(loc, layout, keys); err != nil {
		return keyUsage(err)
	}
	store, err := f.OpenArchive(ctx, loc)
	if err != nil {
		return err
	}
	var js *output.JSONStream
	if opts.Output.Value == "json" {
		js = output.NewJSONStream(output.JSONOut(f.IO), false)
	}
	renderer, color := f.IO.Renderer(), f.IO.ColorEnabled()
	n := 0
	st, runErr := selection.Run(ctx, store, selection.Scope{Layout: layout, Keys: keys}, 8, func(r selection.Result) error {
		if err := stopOnAuth(r); err != nil {
			return err
		}
		if r.Unreadable() {
			r.Err = withoutKey(r.Entry.Key, r.Err)
			reportUnreadable(f, nil, r)
			if r.Decoded == nil || r.Decoded.Size == 0 {
				return nil // nothing was read
			}
		}
		n++
		if js != nil {
			return js.Write(showJSON(r))
		}
		if n > 1 {
			fmt.Fprintln(f.IO.Out)
		}
		return renderShowWidth(f.IO.Out, renderer, color, output.EscapeFor(f.IO.IsStdoutTTY()), f.IO.TerminalWidth(), r)
	})
	if js != nil {
		if err := js.Close(); err != nil && runErr == nil {
			runErr = err
		}
	}
	return finish(runErr, st, opts.IgnoreUnreadable)
}

// withoutKey drops the key the store's errors start with ("KEY: no such
// key"): the report names the key already.
func withoutKey(key string, err error) error {
	if err == nil {
		return nil
	}
	if rest, ok := strings.CutPrefix(err.Error(), key+": "); ok {
		return &keylessError{msg: rest, err: err}
	}
	return err
}

type keylessError struct {
	msg string
	err error
}

func (e *keylessError) Error() string { return e.msg }
func (e *keylessError) Unwrap() error { return e.err }

// showDoc is the -o json form of one object.
type showDoc struct {
	Key            string          `json:"key"`
	KeyBase64      *string         `json:"key_base64"` // the key's bytes when they are not UTF-8
	Record         *dla.View       `json:"record"`
	Unreadable     *string         `json:"unreadable"`
	Layers         []showLayer     `json:"layers"`
	Metadata       map[string]any  `json:"metadata"`
	Hoisted        map[string]any  `json:"hoisted"`
	Event          json.RawMessage `json:"event"`
	Detail         json.RawMessage `json:"detail"`
	MessageSource  *string         `json:"message_source"`
	CumulusMessage json.RawMessage `json:"cumulus_message"`
}

type showLayer struct {
	BodyKey  string         `json:"body_key"`
	Metadata map[string]any `json:"metadata"`
}

func fieldsMap(fs []dla.Field) map[string]any {
	if fs == nil {
		return nil
	}
	m := make(map[string]any, len(fs))
	for _, f := range fs {
		m[f.Name] = json.RawMessage(f.Raw)
	}
	return m
}

func rawOrNull(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage("null")
	}
	return json.RawMessage(s)
}

func showJSON(r selection.Result) showDoc {
	d := r.Decoded
	doc := showDoc{Key: r.Entry.Key, KeyBase64: dla.KeyBase64(r.Entry.Key)}
	if r.Err != nil {
		s := r.Err.Error()
		doc.Unreadable = &s
	}
	if d == nil {
		doc.Event, doc.Detail, doc.CumulusMessage = rawOrNull(""), rawOrNull(""), rawOrNull("")
		return doc
	}
	v := d.View()
	doc.Record = &v
	for _, l := range d.Layers {
		doc.Layers = append(doc.Layers, showLayer{BodyKey: l.BodyKey, Metadata: fieldsMap(l.Metadata)})
	}
	doc.Metadata = fieldsMap(d.Metadata)
	doc.Hoisted = fieldsMap(d.Hoisted)
	doc.Event = rawOrNull(withoutKeys(d.Event, "detail"))
	doc.Detail = rawOrNull(decodedDetail(d.Detail))
	if d.MessageSource != "" {
		doc.MessageSource = &d.MessageSource
	}
	doc.CumulusMessage = rawOrNull(d.Message)
	return doc
}

// withoutKeys returns a JSON object without some keys (shown elsewhere).
func withoutKeys(raw string, drop ...string) string {
	return rewriteObject(raw, func(k, val gjson.Result) (string, bool) {
		return val.Raw, !slices.Contains(drop, k.Str)
	})
}

// decodedDetail parses detail.input and detail.output when they hold JSON.
func decodedDetail(raw string) string {
	return rewriteObject(raw, func(k, val gjson.Result) (string, bool) {
		if (k.Str == "input" || k.Str == "output") && val.Type == gjson.String && jsontext.Valid(val.Str) {
			return val.Str, true
		}
		return val.Raw, true
	})
}

// rewriteObject rebuilds a JSON object key by key: each value is replaced
// by what fn returns, or left out when fn says so. Non-objects pass through.
func rewriteObject(raw string, fn func(k, val gjson.Result) (string, bool)) string {
	v := gjson.Parse(raw)
	if !v.IsObject() {
		return raw
	}
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	v.ForEach(func(k, val gjson.Result) bool {
		out, keep := fn(k, val)
		if !keep {
			return true
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(k.Raw + ":" + out)
		return true
	})
	b.WriteByte('}')
	return b.String()
}

// maxIndentGrowth is how many times its size show lets a JSON value grow
// when indented (what Cumulus writes grows less than 2 times).
const maxIndentGrowth = 16

// renderShow prints one object for people: sections with styled headings
// on a terminal, the same text without escapes when piped. clean makes
// values from the archive safe for a terminal (output.EscapeFor).
func renderShow(w io.Writer, r *lipgloss.Renderer, color bool, clean func(string) string, res selection.Result) error {
	return renderShowWidth(w, r, color, clean, 0, res)
}

// renderShowWidth is renderShow on a terminal of width columns (0: not a
// terminal): the error text is folded at spaces to fit, and the JSON
// layers are laid out for the width, so that no prose runs past the edge.
// A word wider than the terminal (an ARN, a key) is never cut.
func renderShowWidth(w io.Writer, r *lipgloss.Renderer, color bool, clean func(string) string, width int, res selection.Result) error {
	d := res.Decoded
	jsonWidth := 100
	if width > 0 {
		jsonWidth = min(jsonWidth, width)
	}
	title := r.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	head := r.NewStyle().Bold(true).Foreground(lipgloss.Color("3"))
	label := r.NewStyle().Foreground(lipgloss.Color("8"))
	bad := r.NewStyle().Foreground(lipgloss.Color("9"))
	var b strings.Builder
	section := func(name string) { fmt.Fprintf(&b, "\n%s\n", head.Render(name)) }
	row := func(k, v string) {
		if v == "" {
			v = "null"
		}
		k, v = clean(k), clean(v)
		fmt.Fprintf(&b, "  %s %s\n", label.Render(fmt.Sprintf("%-18s", k)), v)
	}
	js := func(raw string) {
		if raw == "" {
			b.WriteString("  null\n")
			return
		}
		if jsontext.TooDeep(raw) {
			// The printer recurses once per level (the decoder refuses such
			// objects; this guards the printer on its own).
			fmt.Fprintf(&b, "  (nested deeper than %d levels: not shown)\n", jsontext.MaxDepth)
			return
		}
		// Indenting multiplies a text by its depth: a long array 500
		// levels down would print gigabytes. Such a value is shown as is.
		if n := jsontext.IndentedSize(raw, 2, 2); n > maxIndentGrowth*int64(len(raw))+1<<20 {
			fmt.Fprintf(&b, "  (indented, this value would take %s: shown without indentation)\n  ", output.HumanBytes(n))
			b.WriteString(raw)
			b.WriteByte('\n')
			return
		}
		out := pretty.PrettyOptions([]byte(raw), &pretty.Options{Width: jsonWidth, Prefix: "  ", Indent: "  ", SortKeys: false})
		out = []byte(clean(string(out)))
		if color {
			out = pretty.Color(out, nil)
		}
		b.Write(out)
	}

	fmt.Fprintln(&b, title.Render(clean(res.Entry.Key)))
	if res.Err != nil {
		fmt.Fprintf(&b, "  %s %s\n", bad.Render("unreadable:"), clean(res.Err.Error()))
	}
	section("Summary")
	row("generation", string(d.Generation))
	row("body layers", fmt.Sprint(d.Depth))
	row("size", output.HumanBytes(d.Size))
	row("date", d.Date())
	row("message id", d.MessageID)
	row("status", d.Status)
	row("time", d.Time)
	row("execution", d.ExecutionArn)
	row("state machine", d.StateMachineArn)
	row("collection", d.CollectionID)
	row("provider", d.ProviderID)
	if d.HasGranules {
		row("granules", fmt.Sprintf("%d", len(d.Granules)))
		for _, g := range d.Granules {
			fmt.Fprintf(&b, "  %18s   %s\n", "", clean(orNull(g)))
		}
	} else {
		row("granules", "")
	}
	if len(d.Derived) > 0 {
		row("derived here", strings.Join(d.Derived, ", ")+" (not carried by the object)")
	}
	if len(d.Problems) > 0 {
		section("Problems")
		for _, p := range d.Problems {
			fmt.Fprintf(&b, "  - %s\n", clean(p))
		}
	}
	if d.HasError {
		section("Error")
		for line := range strings.SplitSeq(strings.TrimRight(d.Error, "\n"), "\n") {
			fmt.Fprintf(&b, "%s\n", output.Fold(output.Fields(clean(line), width-2), width, "  ", "  "))
		}
	}
	if len(d.Metadata) > 0 {
		section("SQS metadata (layers merged, the outer layer wins)")
		for _, m := range d.Metadata {
			if m.Name == "error" || (dla.IsHoisted(m.Name) && d.Generation == dla.GenDLARecord) {
				continue // shown above
			}
			row(m.Name, compact(m.Raw))
		}
	}
	if d.Event != "" {
		name := "Innermost body"
		if d.Detail != "" {
			name = "EventBridge event (detail below)"
		}
		section(name)
		js(withoutKeys(d.Event, "detail"))
	}
	if d.Detail != "" {
		section("Step Functions detail (input and output below)")
		js(withoutKeys(d.Detail, "input", "output"))
	}
	if d.Message != "" {
		section("Cumulus message (from " + d.MessageSource + ")")
		js(d.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// compact prints a metadata value on one line.
func compact(raw string) string {
	v := gjson.Parse(raw)
	if v.Type == gjson.String {
		return v.Str
	}
	return string(pretty.Ugly([]byte(raw)))
}
