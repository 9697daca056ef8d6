package audit

import "time"

// HistoryLine is one run as `history -o ndjson` prints it
// (deadletter.history/v1).
type HistoryLine struct {
	Schema    string         `json:"schema"`
	RunID     string         `json:"run_id"`
	Tool      string         `json:"tool"`
	Version   string         `json:"version"`
	Verb      string         `json:"verb"`
	StartedAt time.Time      `json:"started_at"`
	EndedAt   *time.Time     `json:"ended_at"`
	Finished  bool           `json:"finished"`
	Actor     Actor          `json:"actor"`
	Reason    *string        `json:"reason"`
	Argv      []string       `json:"argv"`
	Target    Target         `json:"target"`
	Selection map[string]any `json:"selection,omitempty"`
	Plan      map[string]int `json:"plan,omitempty"`
	Counts    map[string]int `json:"counts"`
	ExitCode  *int           `json:"exit_code"`
	Error     string         `json:"error,omitempty"`
	Record    string         `json:"record"`
	Problem   string         `json:"problem,omitempty"`
	// Items are the outcomes of the record a filter named (--key,
	// --granule, --notification), when one was given.
	Items []Item `json:"items,omitempty"`
}

// Line is the run's history line; items are included when withItems.
// The argv, the API's URL and the errors are redacted again as they are
// read: a record written by a version that missed a form of secret does
// not show it.
func (r *Run) Line(where string, withItems bool) HistoryLine {
	target := r.Target
	target.API = RedactText(target.API)
	l := HistoryLine{Schema: HistorySchema, RunID: r.RunID, Tool: r.Tool, Version: r.Version, Verb: r.Verb,
		StartedAt: r.StartedAt, Actor: r.Actor, Argv: RedactArgv(r.Argv), Target: target, Selection: r.Selection,
		Plan: r.Plan, Counts: r.Counts(), Record: where, Problem: r.Problem}
	if r.Reason != "" {
		reason := r.Reason
		l.Reason = &reason
	}
	if r.Finished != nil {
		end, code := r.Finished.EndedAt, r.Finished.ExitCode
		l.EndedAt, l.ExitCode, l.Finished, l.Error = &end, &code, true, RedactText(r.Finished.Error)
	}
	if withItems {
		l.Items = make([]Item, len(r.Items))
		for i, it := range r.Items {
			it.Error = RedactText(it.Error)
			l.Items[i] = it
		}
	}
	return l
}
