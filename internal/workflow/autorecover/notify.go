package autorecover

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/shellword"
)

// MaxMessageBytes is SNS's limit on a message (256 KiB), and the most a
// notification's text and its JSON may take together.
const MaxMessageBytes = 256 * 1024

// Notification is one pass's message: a subject, the text a person reads
// (SNS's "default", e-mail) and the report as JSON (for SQS, Lambda and
// HTTP subscribers), in one MessageStructure=json body under
// MaxMessageBytes.
type Notification struct {
	Subject string
	Text    string
	JSON    []byte
	// Digest names what the message says, leaving out what changes from
	// pass to pass without news (times, the backoff's deadlines): a pass
	// whose digest is the last one sent, and that recovered nothing, sends
	// nothing.
	Digest string
}

// Body is the SNS message (MessageStructure json): the text for every
// protocol but those that take the JSON.
func (n Notification) Body() (string, error) {
	b, err := json.Marshal(map[string]string{
		"default": n.Text, "email": n.Text, "sms": n.Subject,
		"sqs": string(n.JSON), "lambda": string(n.JSON), "http": string(n.JSON), "https": string(n.JSON),
	})
	return string(b), err
}

// Worth reports whether n is news against the last notification's digest:
// something was recovered, or what waits or needs a person is not what the
// last message said.
func (n Notification) Worth(r *Report, last string) bool {
	return r.Totals.Written+r.Totals.Dropped+r.Totals.Failed > 0 || n.Digest != last
}

// shownPerSection is how many groups each section of the text names
// before "and N more".
const shownPerSection = 20

// Notify builds the notification of r: what was recovered, what waits and
// until when, and what needs a person, with triage's own verdicts and
// commands. When the whole would not fit in MaxMessageBytes, fewer groups
// are named (the counts stay whole) and the JSON keeps the totals and
// the groups that fit.
func Notify(r *Report) Notification {
	inJSON := len(r.Groups)
	for shown := shownPerSection; ; shown /= 2 {
		n := build(r, shown, inJSON)
		body, err := n.Body()
		if err == nil && len(body) <= MaxMessageBytes || shown == 0 {
			return n
		}
		inJSON = shown
	}
}

func build(r *Report, shown, inJSON int) Notification {
	var recovered, waiting, person []GroupReport
	for _, g := range r.Groups {
		switch {
		case g.Recovered != nil && g.Recovered.Selected > 0:
			recovered = append(recovered, g)
		}
		switch {
		case g.Decision == Waits || g.Probe != nil && g.Probe.Outcome == ProbeEnvironment:
			waiting = append(waiting, g)
		case g.Decision == Person || g.Probe != nil && g.Probe.Outcome == ProbeNoWrite || g.Recovered != nil && g.Recovered.OverAttempts > 0:
			person = append(person, g)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dla autorecover (%s mode) on %s, %s..%s: %d objects in %d groups, %s\n",
		r.Mode, r.Archive, r.From, r.To, r.Objects, len(r.Groups), r.CountedBy())
	t := r.Totals
	fmt.Fprintf(&b, "recovered: %d written, %d dropped, %d moved to failed-sqs/, %d left in sqs/\n", t.Written, t.Dropped, t.Failed, t.Left)
	if r.Stopped != "" {
		fmt.Fprintf(&b, "stopped early: %s; the next pass goes on\n", r.Stopped)
	}
	section := func(title string, gs []GroupReport, line func(GroupReport) string) {
		if len(gs) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s (%d groups):\n", title, len(gs))
		for i, g := range gs {
			if i == shown {
				fmt.Fprintf(&b, "  and %d more groups (dla autorecover -o json lists them)\n", len(gs)-shown)
				break
			}
			b.WriteString(line(g))
		}
	}
	section("recovered", recovered, func(g GroupReport) string {
		c := g.Recovered
		return fmt.Sprintf("  %d of %s: %d written, %d dropped, %d failed, %d left\n", c.Selected, groupName(g), c.Written, c.Dropped, c.Failed, c.Left)
	})
	section("waits for the database", waiting, func(g GroupReport) string {
		s := fmt.Sprintf("  %d of %s", g.Count, groupName(g))
		if g.WaitUntil != nil {
			s += " until " + g.WaitUntil.UTC().Format(time.RFC3339)
		}
		if g.Probe != nil && g.Probe.Error != "" {
			s += ": " + g.Probe.Error
		}
		return s + "\n"
	})
	section("needs a person", person, func(g GroupReport) string {
		s := fmt.Sprintf("  %d %s %s: %s\n", g.Count, g.Class, groupName(g), g.Verdict)
		if g.Recovered != nil && g.Recovered.OverAttempts > 0 {
			s += fmt.Sprintf("    %d tried too often already; look at one first\n", g.Recovered.OverAttempts)
		}
		if len(g.Command) > 0 {
			s += "    " + shellword.Join(g.Command...) + "\n"
		}
		return s
	})
	if r.Audit != "" {
		fmt.Fprintf(&b, "\nrecord: %s\n", r.Audit)
	}

	js := *r
	if inJSON < len(js.Groups) {
		js.Groups = js.Groups[:inJSON]
	}
	j, _ := json.Marshal(js)
	subject := fmt.Sprintf("dla autorecover: %d recovered, %d groups wait, %d need a person", t.Written+t.Dropped, len(waiting), len(person))
	return Notification{Subject: cut(subject, 99), Text: b.String(), JSON: j, Digest: digest(r, waiting, person)}
}

// digest names the news of a pass: the groups that wait and those that
// need a person, by key, decision and count (not the backoff's times, which
// move at each probe).
func digest(r *Report, waiting, person []GroupReport) string {
	var lines []string
	for _, g := range waiting {
		lines = append(lines, "wait\x00"+groupName(g)+fmt.Sprintf("\x00%d", g.Count))
	}
	for _, g := range person {
		lines = append(lines, "person\x00"+groupName(g)+fmt.Sprintf("\x00%d", g.Count))
	}
	sort.Strings(lines)
	h := sha256.Sum256([]byte(r.Archive + "\x01" + strings.Join(lines, "\x01")))
	return hex.EncodeToString(h[:12])
}

func groupName(g GroupReport) string {
	if g.ErrorClass == nil {
		return "the unreadable objects"
	}
	return fmt.Sprintf("%q", *g.ErrorClass)
}

// cut is s in at most n bytes, on a rune boundary (SNS: a subject under
// 100 characters).
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
