package autorecover

import (
	"time"

	"github.com/deadletter/deadletter/internal/triage"
)

// ReportSchema names a pass's report (`dla autorecover -o json`, and the
// JSON of its notification).
const ReportSchema = "deadletter.dla.autorecover/v1"

// Modes of a pass.
const (
	ModeReport  = "report"  // triage, probe and notify; write nothing
	ModeRecover = "recover" // and recover the groups whose probe writes
)

// Report is what one pass did.
type Report struct {
	Schema    string    `json:"schema"`
	Mode      string    `json:"mode"`
	DryRun    bool      `json:"dry_run"`
	Archive   string    `json:"archive"`
	Engine    string    `json:"engine"` // who counted: EngineLocal (the objects read) or EngineAthena
	From      string    `json:"from"`   // the lookback's first and last date folders
	To        string    `json:"to"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Objects   int       `json:"objects"` // in the lookback, as the engine counted
	// Queries are the Athena queries the pass ran (EngineAthena): the
	// triage's, and the keys of the groups recovered.
	Queries []AthenaQuery `json:"athena_queries,omitempty"`
	// Readiness is why readiness was not checked ("" when it was).
	Readiness string        `json:"readiness_not_checked,omitempty"`
	Groups    []GroupReport `json:"groups"`
	Totals    Totals        `json:"totals"`
	// Stopped names the budget that ended the pass early: "max-objects",
	// "deadline", or "" for none.
	Stopped string `json:"stopped,omitempty"`
	// Audit is where the pass's record is ("" for none: report mode, a
	// dry run).
	Audit string `json:"audit,omitempty"`
	// Notification is what became of the pass's notification.
	Notification NotificationReport `json:"notification"`
}

// CountedBy says how the pass counted its lookback, for a line of text.
func (r *Report) CountedBy() string {
	if r.Engine == EngineAthena {
		return "counted by Athena"
	}
	return "each object read"
}

// GroupReport is one group of the triage and what the pass did with it.
type GroupReport struct {
	ErrorClass *string      `json:"error_class"` // null for the unreadable objects
	Class      triage.Class `json:"class"`       // the rule's
	Rule       string       `json:"rule"`
	Count      int          `json:"count"`
	FirstDate  string       `json:"first_date,omitempty"`
	LastDate   string       `json:"last_date,omitempty"`
	Decision   Decision     `json:"decision"`
	Why        string       `json:"why"`
	WaitUntil  *time.Time   `json:"wait_until,omitempty"`
	// Verdict is triage's own summary of the group; Command the command
	// triage prints for it.
	Verdict string   `json:"verdict"`
	Command []string `json:"command,omitempty"`
	Probe   *Probe   `json:"probe,omitempty"`
	// Recovered is the group's recover, when it ran.
	Recovered *Counts `json:"recovered,omitempty"`
}

// Probe is a group's probe: recover's dry run of a few of its objects.
type Probe struct {
	Tried    int            `json:"tried"`
	Writes   int            `json:"would_write"`
	Failed   map[string]int `json:"failed,omitempty"` // by error class
	Outcome  ProbeOutcome   `json:"outcome"`
	Error    string         `json:"error,omitempty"` // the environment error that makes it wait
	Duration time.Duration  `json:"-"`
}

// Counts are a recover's results.
type Counts struct {
	Selected int `json:"selected"`
	Written  int `json:"written"`
	Dropped  int `json:"dropped"`
	Failed   int `json:"failed"` // moved to failed-sqs/
	Left     int `json:"left"`   // left in sqs/ (the environment failed)
	// OverAttempts were not tried: runs tried them max-attempts times.
	OverAttempts int `json:"over_attempts"`
}

// Totals are the pass's groups added up.
type Totals struct {
	Counts
	Groups  int `json:"groups"`
	Tried   int `json:"tried"`   // groups probed
	Waiting int `json:"waiting"` // groups in their backoff, or whose probe found the environment failing
	Person  int `json:"person"`  // groups that need a person
}

// NotificationReport says whether the pass notified, and why not.
type NotificationReport struct {
	Topic string `json:"topic,omitempty"`
	Sent  bool   `json:"sent"`
	// Why is why nothing was sent: "no topic", "nothing changed since
	// the notification at …", "dry run", or the publish's error.
	Why       string `json:"why,omitempty"`
	MessageID string `json:"message_id,omitempty"`
}

// Add counts g's recover into t.
func (t *Totals) Add(c Counts) {
	t.Selected += c.Selected
	t.Written += c.Written
	t.Dropped += c.Dropped
	t.Failed += c.Failed
	t.Left += c.Left
	t.OverAttempts += c.OverAttempts
}
