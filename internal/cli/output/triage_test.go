package output

import (
	"regexp"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// sgrSeq is a real Select Graphic Rendition sequence (colour, bold).
var sgrSeq = regexp.MustCompile("\x1b\\[[0-9;]*m")

func triageTTY(width int, env map[string]string) (*iostreams.IOStreams, *strings.Builder) {
	ios, _, _, _ := iostreams.Test()
	ios.SetTTY(false, true, true)
	ios.SetWidth(width)
	ios.SetEnv(func(k string) string { return env[k] })
	b := &strings.Builder{}
	ios.Out = b
	return ios, b
}

// sampleView has a hostile error text (a clear-screen and a title
// sequence), a long verdict with shorter forms, and a long command.
func sampleView() TriageView {
	return TriageView{Unit: "object", Steps: []string{"retry 8 objects now"}, Notes: []string{"readiness not checked"},
		Groups: []TriageCard{
			{Count: 28, Class: "fix-first", Cells: []string{"2024-03-01..03-05", "MOD04_L2___61 +6", "UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL. No records written to the database."},
				Verdicts: []string{"fix first: collections " + strings.Repeat("MOD09GQ___006, ", 3) + "and 4 more", "fix first: collections MOD09GQ___006 and 6 more"},
				Command:  "dla recover --archive s3://b/stack --from 2024-03-01 --to 2024-03-05 --error-class 'UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL. No records written to the database.' --dry-run"},
			{Count: 3, Class: "permanent", Cells: []string{"2024-03-02", "-", "Error: \x1b[2J\x1b]0;pwned\x07 cleared"},
				Verdicts: []string{"never as it is"}, Command: "dla search --archive s3://b/stack --date 2024-03-02 --error-class 'Error: …' -o keys"},
			{Count: 1, Class: "unknown", Cells: []string{"-", "-", "(no error text)"}, Verdicts: []string{"unknown: no rule"}},
		}}
}

// On a terminal of any width, each header row fits, the error class is
// cut with "…", a command is printed whole on its own indented line, the
// verdict takes the longest form that fits, and archived text is escaped
// while the view's own colours are real escape sequences.
func TestWriteTriageFitsTheWidthAndKeepsCommandsWhole(t *testing.T) {
	v := sampleView()
	for _, width := range []int{80, 100, 200} {
		for _, env := range []map[string]string{nil, {"NO_COLOR": "1"}, {"TERM": "dumb"}} {
			ios, out := triageTTY(width, env)
			if err := WriteTriage(ios, v); err != nil {
				t.Fatal(err)
			}
			screen := out.String()
			color := env == nil
			if got := sgrSeq.MatchString(screen); got != color {
				t.Errorf("%d columns, env %v: colour %v, want %v:\n%q", width, env, got, color, screen)
			}
			plain := sgrSeq.ReplaceAllString(screen, "")
			if strings.ContainsAny(plain, "\x1b\x07") {
				t.Errorf("%d columns, env %v: a raw control character outside the view's styling:\n%q", width, env, plain)
			}
			if !strings.Contains(plain, `Error: \x1b[2J\x1b]0;pwne`) {
				t.Errorf("%d columns: the archived text is not shown escaped:\n%s", width, plain)
			}
			lines := strings.Split(strings.TrimSuffix(plain, "\n"), "\n")
			commands := 0
			for _, l := range lines {
				if c := strings.TrimLeft(l, " "); strings.HasPrefix(c, "dla ") {
					commands++
					if !strings.HasPrefix(l, "      dla ") {
						t.Errorf("%d columns: a command is not on its own indented line: %q", width, l)
					}
					continue
				}
				if w := runewidth.StringWidth(l); w > width {
					t.Errorf("%d columns: a line of %d columns: %q", width, w, l)
				}
			}
			for _, g := range v.Groups {
				if g.Command != "" && !strings.Contains(plain, "\n      "+g.Command+"\n") {
					t.Errorf("%d columns: the command is cut or not alone on its line: %q\n%s", width, g.Command, plain)
				}
			}
			if commands != 2 {
				t.Errorf("%d columns: %d command lines, want 2:\n%s", width, commands, plain)
			}
			if !strings.HasPrefix(plain, "32 objects in 3 groups: 28 fix-first, 3 permanent, 1 unknown\nfirst: retry 8 objects now\nreadiness not checked\n") {
				t.Errorf("%d columns: the summary:\n%s", width, plain)
			}
			wantVerdict := v.Groups[0].Verdicts[0]
			if width == 80 {
				wantVerdict = v.Groups[0].Verdicts[1]
			}
			if !strings.Contains(plain, "\n    "+wantVerdict+"\n") {
				t.Errorf("%d columns: want the verdict %q:\n%s", width, wantVerdict, plain)
			}
			if color && !strings.Contains(screen, "fix-first") || !color && !strings.Contains(plain, "[fix-first]") {
				t.Errorf("%d columns: no badge:\n%q", width, screen)
			}
			cut := strings.Contains(lines[4], "…")
			if cut != (width < 200) {
				t.Errorf("%d columns: the error class cut %v: %q", width, cut, lines[4])
			}
		}
	}
}

// The view at 80 columns without colour, as a person sees it.
func TestWriteTriageAt80Columns(t *testing.T) {
	ios, out := triageTTY(80, map[string]string{"NO_COLOR": "1"})
	if err := WriteTriage(ios, sampleView()); err != nil {
		t.Fatal(err)
	}
	want := `32 objects in 3 groups: 28 fix-first, 3 permanent, 1 unknown
first: retry 8 objects now
readiness not checked

28  [fix-first]  2024-03-01..03-05  MOD04_L2___61 +6  UnmetRequirementsError: C…
    fix first: collections MOD09GQ___006 and 6 more
      dla recover --archive s3://b/stack --from 2024-03-01 --to 2024-03-05 --error-class 'UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL. No records written to the database.' --dry-run

 3  [permanent]  2024-03-02         -                 Error: \x1b[2J\x1b]0;pwne…
    never as it is
      dla search --archive s3://b/stack --date 2024-03-02 --error-class 'Error: …' -o keys

 1  [unknown]    -                  -                 (no error text)
    unknown: no rule
`
	if got := out.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// A lead cell gives way on a narrow terminal, the first (a date or a
// window) never; a verdict too long for any form is wrapped, not cut.
func TestWriteTriageNarrow(t *testing.T) {
	v := TriageView{Unit: "message", Groups: []TriageCard{{Count: 221, Class: "transient",
		Cells:    []string{"2025-11-14 08:30..08:59", "2003 NotificationNotFound", "notification not found"},
		Verdicts: []string{"retry now: replay this burst once the cause is gone (pass --queue-base-url to triage to fill in the base)"},
		Command:  "pushdlq replay --dlq q --window 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z --codes 2003 --dry-run"}}}
	ios, out := triageTTY(60, map[string]string{"NO_COLOR": "1"})
	if err := WriteTriage(ios, v); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	want := []string{"221 messages in 1 group: 221 transient", "",
		"221  [transient]  2025-11-14 08:30..08:59  2003 Noti…  notification no…",
		"     retry now: replay this burst once the cause is gone",
		"     (pass --queue-base-url to triage to fill in the base)",
		"       " + v.Groups[0].Command, ""}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("at 60 columns, got:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
}
