// Package audit is the record of every run that changes anything: who ran
// which verb, when, why, against what, and each item's outcome. A run's
// record is a folder of objects written with a conditional put (never
// replacing one), so that concurrent runs keep separate records:
//
//	<base><YYYY-MM-DD>/<run-id>/started.json       before the first move
//	<base><YYYY-MM-DD>/<run-id>/items-000001.ndjson  the items, in chunks
//	<base><YYYY-MM-DD>/<run-id>/finished.json      at the end (Ctrl-C too)
//
// A run killed before its end leaves no finished.json: it "did not
// finish", and its items are those of the chunks it wrote. The package
// knows nothing of AWS or of the verbs: the store is an archive.Store, and
// the caller identity a function the CLI hands in.
package audit

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// Schema names the records' format; HistorySchema the lines of history.
const (
	Schema        = "deadletter.audit/v1"
	HistorySchema = "deadletter.history/v1"
)

// Actor is who ran it. AWSARN and AWSAccount are null where the caller
// identity could not be had, and AWSNote says why.
type Actor struct {
	AWSARN     *string `json:"aws_arn"`
	AWSAccount *string `json:"aws_account"`
	AWSNote    string  `json:"aws_note,omitempty"`
	OSUser     string  `json:"os_user"`
	Host       string  `json:"host"`
}

// Who is the shortest name of the actor for a table: the AWS identity's
// resource part, an assumed role as role/NAME/SESSION (of
// arn:aws:sts::123456789012:assumed-role/NAME/SESSION), else the OS user
// at the host.
func (a Actor) Who() string {
	if a.AWSARN != nil && *a.AWSARN != "" {
		short := shortARN(*a.AWSARN)
		if rest, ok := strings.CutPrefix(short, "assumed-role/"); ok {
			return "role/" + rest
		}
		return short
	}
	if a.Host != "" {
		return a.OSUser + "@" + a.Host
	}
	return a.OSUser
}

// shortARN is an ARN's resource part: "assumed-role/ops/alice" of
// arn:aws:sts::123:assumed-role/ops/alice.
func shortARN(arn string) string {
	n := 0
	for i := 0; i < len(arn); i++ {
		if arn[i] == ':' {
			n++
			if n == 5 {
				return arn[i+1:]
			}
		}
	}
	return arn
}

// Database is a database target, never with its password.
type Database struct {
	Host       string `json:"host"`
	Port       string `json:"port,omitempty"`
	Name       string `json:"name"`
	Generation string `json:"generation,omitempty"`
}

// Target is what the run acted on.
type Target struct {
	Archive  string    `json:"archive,omitempty"`
	Database *Database `json:"database,omitempty"`
	API      string    `json:"api,omitempty"`
	DLQ      string    `json:"dlq,omitempty"`
	Queues   []string  `json:"queues,omitempty"`
	Function string    `json:"function,omitempty"`
}

// Started is the record written before the first change.
type Started struct {
	Schema    string         `json:"schema"`
	Record    string         `json:"record"` // "started"
	RunID     string         `json:"run_id"`
	Tool      string         `json:"tool"`
	Version   string         `json:"version"`
	Verb      string         `json:"verb"`
	Argv      []string       `json:"argv"`
	StartedAt time.Time      `json:"started_at"`
	Actor     Actor          `json:"actor"`
	Reason    string         `json:"reason"`
	Target    Target         `json:"target"`
	Selection map[string]any `json:"selection,omitempty"`
	Plan      map[string]int `json:"plan,omitempty"`
}

// Item is one record's outcome in a run: an archive object (Key) or a
// queue message (MessageID, NotificationID).
type Item struct {
	Key            string   `json:"key,omitempty"`
	MessageID      string   `json:"message_id,omitempty"`
	NotificationID string   `json:"notification_id,omitempty"`
	Granules       []string `json:"granules,omitempty"`
	Execution      string   `json:"execution,omitempty"`
	Result         string   `json:"result,omitempty"`
	Action         string   `json:"action"`
	MovedTo        string   `json:"moved_to,omitempty"`
	Queue          string   `json:"queue,omitempty"`
	Error          string   `json:"error,omitempty"`
	// ReplaysBefore is how many earlier runs had replayed the
	// notification (the replay guard's count), where it was counted.
	ReplaysBefore int `json:"replays_before,omitempty"`
}

// Finished is the record written at the end of a run.
type Finished struct {
	Schema      string         `json:"schema"`
	Record      string         `json:"record"` // "finished"
	RunID       string         `json:"run_id"`
	EndedAt     time.Time      `json:"ended_at"`
	Counts      map[string]int `json:"counts"`
	ExitCode    int            `json:"exit_code"`
	Interrupted bool           `json:"interrupted,omitempty"`
	Error       string         `json:"error,omitempty"`
	Items       int            `json:"items"`
	// Unrecorded is how many items could not be written to the record.
	Unrecorded int `json:"unrecorded,omitempty"`
	// State is what the verb leaves for its next run to read (dla
	// autorecover's backoff and last notification), in its own format.
	State json.RawMessage `json:"state,omitempty"`
}

// NewRunID is a run id that sorts by its start: the UTC time to the
// second, then 8 random hex digits so that two runs in one second differ.
func NewRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
