package autorecover

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/triage"
)

func str(s string) *string { return &s }

func outageReport(until time.Time) *Report {
	return &Report{Schema: ReportSchema, Mode: ModeRecover, Archive: "s3://b/stack/dead-letter-archive/", Engine: EngineLocal,
		From: "2026-11-26", To: "2026-12-02", Objects: 2012,
		Groups: []GroupReport{
			{ErrorClass: str("KnexTimeoutError: Knex: Timeout acquiring a connection."), Class: triage.Transient, Count: 1500,
				Decision: Try, Recovered: &Counts{Selected: 1500, Written: 1500}},
			{ErrorClass: str("connect ECONNREFUSED <id>:<n>"), Class: triage.Transient, Count: 400, Decision: Waits, WaitUntil: &until},
			{ErrorClass: str(`RecordDoesNotExist: Record in collections with identifiers {"name":"<v>","version":"<v>"} does not exist.`),
				Class: triage.FixFirst, Count: 100, Decision: Person, Verdict: "fix first: create collection MOD09GQ___006; 0 of 100 ready now",
				Command: []string{"dla", "recover", "--archive", "s3://b/stack", "--error-class", "it's"}},
		},
		Totals: Totals{Counts: Counts{Selected: 1500, Written: 1500}}}
}

// The text names what was recovered, what waits and until when, and what
// needs a person with triage's verdict and its command, quoted for a
// shell; the JSON is the report.
func TestANotificationSaysWhatWasRecoveredWhatWaitsAndWhatNeedsAPerson(t *testing.T) {
	until := time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC)
	n := Notify(outageReport(until))
	for _, want := range []string{
		"recovered: 1500 written, 0 dropped, 0 moved to failed-sqs/, 0 left in sqs/\n",
		"recovered (1 groups):\n  1500 of \"KnexTimeoutError: Knex: Timeout acquiring a connection.\": 1500 written",
		"waits for the database (1 groups):\n  400 of \"connect ECONNREFUSED <id>:<n>\" until 2026-12-02T03:30:00Z\n",
		"needs a person (1 groups):\n  100 fix-first ",
		"fix first: create collection MOD09GQ___006; 0 of 100 ready now\n",
		`    dla recover --archive s3://b/stack --error-class 'it'\''s'` + "\n",
	} {
		if !strings.Contains(n.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, n.Text)
		}
	}
	if n.Subject != "dla autorecover: 1500 recovered, 1 groups wait, 1 need a person" {
		t.Errorf("subject %q", n.Subject)
	}
	var back Report
	if err := json.Unmarshal(n.JSON, &back); err != nil || back.Schema != ReportSchema || len(back.Groups) != 3 {
		t.Errorf("JSON: %v, schema %q, %d groups", err, back.Schema, len(back.Groups))
	}
	body, err := n.Body()
	var structured map[string]string
	if err != nil || json.Unmarshal([]byte(body), &structured) != nil || structured["default"] != n.Text || structured["sqs"] != string(n.JSON) {
		t.Errorf("body is not SNS's MessageStructure json with the text as default and the JSON for sqs: %v", err)
	}
}

// A pass whose only change is the backoff's deadline is no news; one that
// recovers something, or whose waiting groups differ, is.
func TestANotificationIsNewsOnlyWhenSomethingChanged(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 30, 0, 0, time.UTC)
	quiet := outageReport(t0)
	quiet.Groups[0].Recovered, quiet.Totals = nil, Totals{}
	first := Notify(quiet)
	later := outageReport(t0.Add(time.Hour))
	later.Groups[0].Recovered, later.Totals = nil, Totals{}
	if n := Notify(later); n.Worth(later, first.Digest) {
		t.Error("a pass whose waiting group only waits longer is news")
	}
	if r := outageReport(t0); !Notify(r).Worth(r, first.Digest) {
		t.Error("a pass that recovered 1500 objects is not news")
	}
	moved := outageReport(t0)
	moved.Groups[0].Recovered, moved.Totals = nil, Totals{}
	moved.Groups[1].Count = 399
	if n := Notify(moved); !n.Worth(moved, first.Digest) {
		t.Error("a waiting group that changed is not news")
	}
}

// However many groups, the message stays under SNS's limit: fewer groups
// are named, the counts stay whole.
func TestANotificationOfThousandsOfGroupsFitsSNSsLimit(t *testing.T) {
	r := outageReport(time.Now())
	long := strings.Repeat("é", 3000)
	for i := 0; i < 300; i++ {
		r.Groups = append(r.Groups, GroupReport{ErrorClass: str(fmt.Sprintf("%s %d", long, i)), Class: triage.Unknown, Count: 1,
			Decision: Person, Verdict: "unknown: no rule; look at one before retrying", Command: []string{"dla", "show", long}})
	}
	n := Notify(r)
	body, err := n.Body()
	if err != nil || len(body) > MaxMessageBytes {
		t.Fatalf("body %d bytes (%v), limit %d", len(body), err, MaxMessageBytes)
	}
	if !strings.Contains(n.Text, "needs a person (301 groups)") || !strings.Contains(n.Text, "more groups (dla autorecover -o json lists them)") {
		t.Errorf("text does not count every group or say what it left out:\n%.600s", n.Text)
	}
}
