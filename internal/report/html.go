package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"

	"github.com/deadletter/deadletter/internal/shellword"
)

// Page is what a report page shows around its sections.
type Page struct {
	Title     string
	Subtitle  []string // lines under the title: the source, the selection, when
	Sections  []Section
	Commands  []Command // what the key links point at
	Generated string
}

// Section is one chart (or table) with its numbers.
type Section struct {
	ID, Title, Note string
	Chart           template.HTML // an SVG from Stacked or Bars, or ""
	Table           Table
	Open            bool        // the table is shown open (it is the content)
	Triage          *TriageView // the triage's groups, drawn instead of a table
}

// Table is a section's numbers: every chart has one, for screen readers,
// for copying, and for print.
type Table struct {
	Header []string
	Rows   [][]Cell
}

// Cell is text, or a key that links to the command that opens it.
type Cell struct {
	Text    string
	Command int // 1-based index into Page.Commands; 0: plain text
	Code    bool
}

// Command is a shell command shown at the end of the page.
type Command struct {
	ID, Text string
}

// Links collects the commands keys link to, one per key.
type Links struct {
	archive  string
	program  string
	root     string
	commands []Command
	byKey    map[string]int
}

// NewLinks links keys to `<program> show --archive <archive> KEY`; keys are
// shown without root (the archive's "<stack>/dead-letter-archive/"), the
// commands hold them whole.
func NewLinks(program, archive, root string) *Links {
	return &Links{program: program, archive: archive, root: root, byKey: map[string]int{}}
}

// Key is a table cell holding key, linked to its show command.
func (l *Links) Key(key string) Cell {
	n, ok := l.byKey[key]
	if !ok {
		l.commands = append(l.commands, Command{ID: fmt.Sprintf("show-%d", len(l.commands)+1),
			Text: l.program + " show --archive " + shellword.Quote(l.archive) + " " + shellword.Quote(key)})
		n = len(l.commands)
		l.byKey[key] = n
	}
	return Cell{Text: strings.TrimPrefix(key, l.root), Command: n, Code: true}
}

// Commands returns the commands linked so far.
func (l *Links) Commands() []Command { return l.commands }

// Write renders the page: one HTML file with its CSS inline, no script,
// and nothing fetched (its Content-Security-Policy allows neither).
func Write(w io.Writer, p Page) error {
	return pageTemplate().Execute(w, p)
}

// pageTemplate is parsed on first use, not at every command's start-up.
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Funcs(template.FuncMap{
		"cmd":   func(p Page, n int) Command { return p.Commands[n-1] },
		"clean": clean,
		"badge": BadgeClass,
		"csp":   func() string { return contentSecurityPolicy },
		"count": func(n int, unit string) string {
			if n == 1 {
				return unit
			}
			return unit + "s"
		},
	}).Parse(`{{define "parts"}}{{range .}}{{if .Kind}}{{clean .Kind}} {{range $i, $n := .Shown}}{{if $i}}, {{end}}<span class="name">{{clean $n}}</span>{{end}} <b class="fold">and {{.More}} more</b>{{else}}{{clean .Text}}{{end}}{{end}}{{end}}
{{- define "folds"}}{{range .}}{{if and .Kind (not .Above)}}<details class="more"><summary>The other {{.More}} {{clean .Kind}}</summary><ul class="names">{{range .Folded}}<li>{{clean .}}</li>{{end}}{{if .Unlisted}}<li class="unlisted">and {{.Unlisted}} that triage does not name here ('triage -o json' lists every one)</li>{{end}}</ul></details>
{{end}}{{end}}{{end}}
{{- define "triage"}}{{$unit := .Unit}}{{if .Summary}}<ul class="tsum">{{range .Summary}}<li><span class="badge {{badge .Class}}">{{clean .Class}}</span> {{.Objects}} {{count .Objects $unit}} in {{.Groups}} group{{if ne .Groups 1}}s{{end}}</li>{{end}}</ul>
<ol class="triage">
{{range .Groups}}<li class="tg {{badge .Class}}" data-class="{{clean .Class}}" data-count="{{.Count}}" data-next="{{clean .Next}}">
<div class="tg-head"><span class="count">{{.Count}} <small>{{count .Count $unit}}</small></span><span class="badge {{badge .Class}}">{{clean .Class}}</span><span class="what">{{clean .What}}</span></div>
{{if .WhatWhole}}<details class="whole"><summary>The whole error class</summary><p>{{clean .WhatWhole}}</p></details>
{{end}}<div class="verdict">{{template "parts" .Verdict}}</div>
{{template "folds" .Verdict}}<div class="step">{{template "parts" .Step}}</div>
{{template "folds" .Step}}{{if .Command}}<pre class="cmd"><code>{{clean .Command}}</code></pre>
{{end}}</li>
{{end}}</ol>
{{else}}<p class="note">None.</p>
{{end}}{{end -}}
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{csp}}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{clean .Title}}</title>
<style>
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1b1b; margin: 0; background: #fff; }
main { max-width: 1180px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 17px; margin: 28px 0 6px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.sub { color: #555; margin: 0; overflow-wrap: anywhere; }
.note { color: #555; margin: 4px 0 8px; }
svg.chart { max-width: 100%; height: auto; display: block; }
svg .grid { stroke: #e5e5e5; }
svg text { font: 11px system-ui, sans-serif; fill: #333; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 4px 0; padding: 0; list-style: none; font-size: 12px; }
.legend span { display: inline-block; width: 10px; height: 10px; margin-right: 4px; vertical-align: -1px; }
table { border-collapse: collapse; margin: 6px 0; font-size: 13px; width: 100%; }
td a code { display: inline-block; min-width: 24em; }
th { white-space: nowrap; overflow-wrap: normal; }
th, td { text-align: left; padding: 3px 10px 3px 0; vertical-align: top; border-bottom: 1px solid #f0f0f0; overflow-wrap: anywhere; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; word-break: break-all; overflow-wrap: anywhere; }
details summary { cursor: pointer; color: #0a58a8; margin: 4px 0; }
a { color: #0a58a8; }
.cmds code { display: block; padding: 2px 0; }
.badge { display: inline-block; white-space: nowrap; overflow-wrap: normal; word-break: keep-all; font: 600 12px/18px system-ui, sans-serif; padding: 0 8px; border: 1px solid; border-radius: 9px; }
.badge.transient { background: #e3f4ec; color: #00583f; border-color: #009E73; }
.badge.fix-first { background: #fdf0d3; color: #6a4100; border-color: #E69F00; }
.badge.permanent { background: #fbe4d8; color: #8c2d00; border-color: #D55E00; }
.badge.unknown, .badge.other { background: #eeeeee; color: #3a3a3a; border-color: #999999; }
.tsum { list-style: none; padding: 0; margin: 6px 0 10px; display: flex; flex-wrap: wrap; gap: 6px 20px; }
ol.triage { list-style: none; padding: 0; margin: 0; }
.tg { border: 1px solid #e2e2e2; border-left: 5px solid #999999; border-radius: 4px; padding: 8px 12px; margin: 8px 0; }
.tg.transient { border-left-color: #009E73; }
.tg.fix-first { border-left-color: #E69F00; }
.tg.permanent { border-left-color: #D55E00; }
.tg-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: 2px 12px; }
.tg-head .count { font-weight: 600; white-space: nowrap; font-variant-numeric: tabular-nums; min-width: 5.5em; }
.tg-head .count small { font-weight: normal; color: #555; }
.tg-head .what { flex: 1 1 24em; min-width: 0; font-weight: 600; overflow-wrap: break-word; }
.verdict, .step { margin: 4px 0 0; }
.step { color: #444; }
.name, .names li { overflow-wrap: anywhere; }
.fold { font-weight: 600; }
details.more, details.whole { margin: 2px 0 0; }
details.more summary, details.whole summary { margin: 0; }
.names { margin: 2px 0 4px; padding-left: 22px; }
details.whole p { margin: 2px 0; overflow-wrap: anywhere; color: #333; }
pre.cmd { margin: 4px 0 2px; background: #f5f7f9; border: 1px solid #d0d7de; border-radius: 4px; padding: 6px 10px; white-space: pre-wrap; }
pre.cmd code { word-break: normal; overflow-wrap: anywhere; user-select: all; -webkit-user-select: all; cursor: text; }
@media (max-width: 640px) {
  main { padding: 8px 12px 32px; }
  td a code { min-width: 0; }
}
@media print {
  main { max-width: none; padding: 0; }
  details { display: block; }
  details > summary { display: none; }
  h2 { break-after: avoid; }
  section { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
</style>
</head>
<body>
<main>
<h1>{{clean .Title}}</h1>
{{range .Subtitle}}<p class="sub">{{clean .}}</p>
{{end}}{{$p := .}}{{range .Sections}}<section id="{{.ID}}">
<h2>{{clean .Title}}</h2>
{{if .Note}}<p class="note">{{clean .Note}}</p>
{{end}}{{if .Triage}}{{template "triage" .Triage}}{{else}}{{if .Chart}}{{.Chart}}
{{end}}{{if .Table.Rows}}<details{{if .Open}} open{{end}}><summary>{{if .Open}}Hide{{else}}Show{{end}} the numbers ({{len .Table.Rows}} rows)</summary>
<table>
<thead><tr>{{range .Table.Header}}<th>{{clean .}}</th>{{end}}</tr></thead>
<tbody>
{{range .Table.Rows}}<tr>{{range .}}{{if .Command}}<td><a href="#{{(cmd $p .Command).ID}}"><code>{{clean .Text}}</code></a></td>{{else if .Code}}<td><code>{{clean .Text}}</code></td>{{else}}<td>{{clean .Text}}</td>{{end}}{{end}}</tr>
{{end}}</tbody>
</table>
</details>
{{else}}<p class="note">None.</p>
{{end}}{{end}}</section>
{{end}}{{if .Commands}}<section id="commands">
<h2>Opening an object</h2>
<p class="note">Each key above links here: the command that shows the object, decoded layer by layer (quoted for bash or zsh).</p>
<div class="cmds">
{{range .Commands}}<code id="{{.ID}}">{{clean .Text}}</code>
{{end}}</div>
</section>
{{end}}<p class="note">Generated {{.Generated}}.</p>
</main>
</body>
</html>
`))
})

// contentSecurityPolicy lets the page run no script and fetch nothing:
// should archived text ever slip through the escaping, it still cannot run
// or load anything.
const contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"

// Legend is the HTML list naming each series' colour.
func Legend(series []Series) template.HTML {
	var b strings.Builder
	b.WriteString(`<ul class="legend">`)
	for i, s := range series {
		fmt.Fprintf(&b, `<li><span style="background:%s"></span>%s</li>`, Palette[i%len(Palette)], esc(s.Name))
	}
	b.WriteString(`</ul>`)
	return template.HTML(b.String())
}
