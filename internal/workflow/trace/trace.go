// Package trace is `dla trace`'s workflow: for one record (a granule, an
// execution or a PDR) it joins what the database holds now, every archive
// message naming it (in sqs/ and failed-sqs/), and what recover would do
// with those messages now, and concludes in one line: the state recover's
// order leaves the record in, and the message that decides it.
//
// The verdicts are recover's own: the messages go through
// dlarecover.DryRun against the real database, one after another
// in recover's order, in one transaction rolled back at the end
// (DryRunOptions.InOrder), so that each meets the rows the ones before it left and
// trace and recover cannot disagree. The rows are read in a read-only
// transaction (cumulusdb.TraceRows). Nothing is written, moved or deleted.
package trace

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/triage"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// Target is one record to trace: its kind (cumulusdb.TraceGranule,
// TraceExecution or TracePDR) and its id (granule id, execution ARN or
// name, PDR name).
type Target struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}

// Verdict is what recover's dry run did with one message for the traced
// record.
type Verdict struct {
	// Result is written, dropped (a stale update the write rules refuse),
	// failed, unreadable, or "not written" (the message names the record
	// but writes nothing of it).
	Result string `json:"result"`
	// Status is the status the message writes for the record ("" when
	// it writes none).
	Status string `json:"status"`
	// Why says why it is dropped or fails ("" when written).
	Why string `json:"why"`
}

// Verdict results beyond recovery's written, dropped and failed.
const (
	Unreadable = "unreadable"
	NotWritten = "not written"
	// NotJudged: the database could not be asked, so no dry run ran.
	NotJudged = "not judged"
)

// Message is one archive message naming the record.
type Message struct {
	Key  string `json:"key"`
	Area string `json:"area"` // sqs or failed-sqs
	Date string `json:"date"` // its date folder (or event date)
	// Time is the event time as written; CreatedAt the record's createdAt
	// the message carries (what the write rules compare).
	Time       *string    `json:"time"`
	CreatedAt  *time.Time `json:"created_at"`
	Status     *string    `json:"workflow_status"` // Step Functions status
	Collection *string    `json:"collection"`
	ErrorClass *string    `json:"error_class"` // null: no error text
	Triage     string     `json:"triage_class"`
	TriageRule string     `json:"triage_rule"`
	// Writes is what the message would write for this record, in words.
	Writes string `json:"writes"`
	// Verdict is what recover does with it after the messages before it
	// (Trace.Messages is in recover's order).
	Verdict Verdict `json:"verdict"`
	// Alone is what dla recover --dry-run reports of it, which judges each
	// message against the rows as they stand, when that differs from
	// Verdict (null: the same).
	Alone   *Verdict `json:"dry_run_alone"`
	decoded *dla.Decoded
}

// Conclusion kinds.
const (
	// ConcludeWrite: a message would be written (Message names it).
	ConcludeWrite = "write"
	// ConcludeNewer: every message would be dropped: the row is newer.
	ConcludeNewer = "database-newer"
	// ConcludeRefused: the newest message fails because another collection
	// holds the granule.
	ConcludeRefused = "refused"
	// ConcludeFails: no message would be written, the newest fails.
	ConcludeFails = "fails"
	// ConcludeNotInArchive: no archive message names the record.
	ConcludeNotInArchive = "not-in-archive"
	// ConcludeNothing: messages name it, none would write it.
	ConcludeNothing = "nothing-to-write"
	// ConcludeNotJudged: the database could not be asked; the archive's
	// messages are listed, none judged.
	ConcludeNotJudged = "not-judged"
)

// Conclusion is the trace in one line, and which messages the next
// command selects.
type Conclusion struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	// Message is the index in Messages of the message concluded on (-1:
	// none).
	Message int `json:"message"`
	// Keys are the keys the next command selects (none: a search).
	Keys []string `json:"keys"`
}

// Trace is one record traced.
type Trace struct {
	Target
	Rows     []cumulusdb.TraceRow `json:"rows"`     // empty: not in the database
	Messages []Message            `json:"messages"` // in recover's order (RecoverOrder)
	// Warnings are what the conclusion alone does not say: messages of
	// more than one collection naming the granule.
	Warnings   []string   `json:"warnings"`
	Conclusion Conclusion `json:"conclusion"`
}

// Tracer collects the messages of a selection that name its targets.
type Tracer struct {
	targets []Target
	found   [][]*Message
}

// New starts a trace of targets.
func New(targets []Target) *Tracer {
	return &Tracer{targets: targets, found: make([][]*Message, len(targets))}
}

// Narrow is f with the prefilter the targets allow: the granules when
// every target is a granule, the executions when every target is one (a
// scope's filter ANDs kinds; the targets are any of them). PDRs are not
// in the decoded record: every object is read.
func (t *Tracer) Narrow(f dla.Filter) dla.Filter {
	var granules, executions []string
	for _, tg := range t.targets {
		switch tg.Kind {
		case cumulusdb.TraceGranule:
			granules = append(granules, tg.ID)
		case cumulusdb.TraceExecution:
			executions = append(executions, tg.ID)
		default:
			return f
		}
	}
	switch {
	case len(executions) == 0:
		f.Granules = granules
	case len(granules) == 0:
		f.Executions = executions
	}
	return f
}

// Names reports whether d names the target.
func Names(d *dla.Decoded, tg Target) bool {
	switch tg.Kind {
	case cumulusdb.TraceGranule:
		return slices.Contains(d.Granules, tg.ID)
	case cumulusdb.TraceExecution:
		return d.ExecutionArn != "" && (d.ExecutionArn == tg.ID || d.ExecutionName() == tg.ID)
	case cumulusdb.TracePDR:
		for _, p := range []string{"payload.pdr.name", "meta.pdr.name"} {
			if gjson.Get(d.Message, p).String() == tg.ID {
				return true
			}
		}
	}
	return false
}

// Add keeps d for each target it names, and reports whether it named one.
func (t *Tracer) Add(d *dla.Decoded, area dla.Area) bool {
	named := false
	for i, tg := range t.targets {
		if !Names(d, tg) {
			continue
		}
		named = true
		m := &Message{Key: d.Key, Area: string(area), Date: d.Date(), Time: opt(d.Time), Status: opt(d.Status),
			Collection: opt(d.CollectionID), CreatedAt: createdAt(d, tg), decoded: d}
		rule := triage.ClassifyDLA(dla.ErrorClass(d.Error))
		if d.HasError || d.Error != "" {
			c := dla.ErrorClass(d.Error)
			m.ErrorClass = &c
		}
		m.Triage, m.TriageRule = string(rule.Class), rule.ID
		if m.ErrorClass == nil {
			m.Triage, m.TriageRule = "", ""
		}
		t.found[i] = append(t.found[i], m)
	}
	return named
}

func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// createdAt is the record's createdAt in the message, as the write rules
// read it: a granule's own createdAt, else the workflow's start time.
func createdAt(d *dla.Decoded, tg Target) *time.Time {
	v := gjson.Result{}
	if tg.Kind == cumulusdb.TraceGranule {
		for _, g := range gjson.Get(d.Message, "payload.granules").Array() {
			if g.Get("granuleId").String() == tg.ID {
				v = g.Get("createdAt")
			}
		}
	}
	if !v.Exists() || v.Type == gjson.Null {
		v = gjson.Get(d.Message, "cumulus_meta.workflow_start_time")
	}
	if v.Type != gjson.Number || v.Int() <= 0 {
		return nil
	}
	at := time.UnixMilli(v.Int()).UTC()
	return &at
}

// Sources are what the verdicts and rows are read with: the archive and the
// database path recover writes through (dbwrite.Open: the same schema
// detection and checks), used only for a dry run and read-only queries.
// With no Path (a database that could not be reached), the archive's half
// is all a trace holds: its messages, each "not judged".
type Sources struct {
	Store   archive.Store
	Layout  dla.Layout
	Path    *dbwrite.Path
	Now     func() time.Time
	Explain func(error) string
}

// Judge reads each target's rows, then runs recover's dry run over every
// message naming it, one after another in recover's order (RecoverOrder),
// in one transaction rolled back at the end (dlarecover.DryRun, InOrder):
// each message meets the rows the ones before it left, as when recover
// writes them all. Each target is judged in a transaction of its own.
func (t *Tracer) Judge(ctx context.Context, j Sources) ([]Trace, error) {
	out := make([]Trace, 0, len(t.targets))
	if j.Path == nil {
		for i, tg := range t.targets {
			out = append(out, t.unjudged(i, tg))
		}
		return out, nil
	}
	for i, tg := range t.targets {
		rows, err := cumulusdb.TraceRows(ctx, j.Path.Database.Pool, tg.Kind, tg.ID)
		if err != nil {
			return nil, err
		}
		tr := Trace{Target: tg, Rows: rows, Messages: []Message{}, Warnings: []string{}}
		ms := t.found[i]
		slices.SortStableFunc(ms, RecoverOrder)
		ms = slices.CompactFunc(ms, func(a, b *Message) bool { return a.Key == b.Key })
		keys := make([]string, len(ms))
		for k, m := range ms {
			keys[k] = m.Key
		}
		objects, err := j.dryRun(ctx, keys, true)
		if err != nil {
			return nil, err
		}
		// What recover's own --dry-run will report of each: it judges each
		// message against the rows as they stand.
		alone, err := j.dryRun(ctx, keys, false)
		if err != nil {
			return nil, err
		}
		st := rowState(rows)
		for _, m := range ms {
			o, ok := objects[m.Key]
			if !ok {
				m.Verdict = Verdict{Result: NotWritten, Why: "recover's dry run did not reach it"}
			} else {
				m.Verdict = verdict(tg, o, m, st)
			}
			if o, ok := alone[m.Key]; ok {
				if v := verdict(tg, o, m, rowState(rows)); v.Result != m.Verdict.Result || v.Status != m.Verdict.Status {
					m.Alone = &v
				}
			}
			m.Writes = writes(tg, m)
			if m.Verdict.Result == recovery.Written && m.Verdict.Status != "" {
				st = &state{createdAt: m.CreatedAt, status: m.Verdict.Status, collection: deref(m.Collection), by: m.Date}
			}
			tr.Messages = append(tr.Messages, *m)
		}
		tr.Warnings = append(tr.Warnings, collectionWarnings(tr)...)
		tr.Conclusion = conclude(tr)
		out = append(out, tr)
	}
	return out, nil
}

// unjudged is target i's archive half alone: its messages in recover's
// order, none judged, and a conclusion that says so (the database could
// not be asked: no row read, no dry run).
func (t *Tracer) unjudged(i int, tg Target) Trace {
	tr := Trace{Target: tg, Messages: []Message{}, Warnings: []string{}}
	ms := t.found[i]
	slices.SortStableFunc(ms, RecoverOrder)
	ms = slices.CompactFunc(ms, func(a, b *Message) bool { return a.Key == b.Key })
	keys := make([]string, len(ms))
	for k, m := range ms {
		m.Verdict = Verdict{Result: NotJudged, Why: "the database could not be asked"}
		m.Writes = writes(tg, m)
		keys[k] = m.Key
		tr.Messages = append(tr.Messages, *m)
	}
	tr.Warnings = append(tr.Warnings, collectionWarnings(tr)...)
	if len(ms) == 0 {
		tr.Conclusion = Conclusion{Kind: ConcludeNotInArchive, Message: -1, Keys: []string{},
			Text: "not in the archive: no write of it failed; the database could not be asked"}
		return tr
	}
	last := ms[len(ms)-1]
	text := fmt.Sprintf("not judged: the database could not be asked, so its one message (%s in %s/) was not tried", last.Date, last.Area)
	if len(ms) > 1 {
		text = fmt.Sprintf("not judged: the database could not be asked, so its %s were not tried (in recover's order the last is of %s in %s/)", messages(len(ms)), last.Date, last.Area)
	}
	tr.Conclusion = Conclusion{Kind: ConcludeNotJudged, Message: len(ms) - 1, Keys: keys,
		Text: text + "; once it answers, see what recover would do"}
	return tr
}

// dryRun is recover's dry run of keys: in their order, in one transaction
// (inOrder), or each in a transaction of its own, as dla recover --dry-run
// runs them.
func (j Sources) dryRun(ctx context.Context, keys []string, inOrder bool) (map[string]dlarecover.Object, error) {
	objects := map[string]dlarecover.Object{}
	if len(keys) == 0 {
		return objects, nil
	}
	scope := selection.Scope{Layout: j.Layout, Area: dla.AreaSQS, Keys: keys}
	if err := dlarecover.DryRun(ctx, j.Path, j.Store, scope, func(o dlarecover.Object) error {
		objects[o.Key] = o
		return nil
	}, dlarecover.DryRunOptions{InOrder: inOrder, Now: j.Now, Explain: j.Explain}); err != nil {
		return nil, fmt.Errorf("recover's dry run of %d messages: %w", len(keys), err)
	}
	return objects, nil
}

// RecoverOrder orders messages as recover takes them: sqs/ (dla recover of
// the archive, as Cumulus's own recovery lists it: by key, so date folder
// then name), then failed-sqs/ (dla recover --failed), each by key.
func RecoverOrder(a, b *Message) int {
	rank := func(m *Message) int {
		if m.Area == string(dla.AreaFailed) {
			return 1
		}
		return 0
	}
	return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a.Key, b.Key))
}

// state is the record as the messages judged so far leave it: the
// database's row, or the last message written (by names its date).
type state struct {
	createdAt          *time.Time
	status, collection string
	by                 string
}

// rowState is the state the database's rows give (nil: no row).
func rowState(rows []cumulusdb.TraceRow) *state {
	if len(rows) == 0 {
		return nil
	}
	r := rows[len(rows)-1]
	return &state{createdAt: r.CreatedAt, status: r.Status, collection: deref(r.Collection)}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// verdict reads the dry run's outcome for the traced record.
func verdict(tg Target, o dlarecover.Object, m *Message, st *state) Verdict {
	failed := func() Verdict {
		return Verdict{Result: recovery.Failed, Why: cmp.Or(o.Error, o.ErrorClass, "recover failed it")}
	}
	switch o.Result {
	case dlarecover.ResultUnreadable:
		return Verdict{Result: Unreadable, Why: cmp.Or(o.Error, "the object cannot be read")}
	case dlarecover.ResultLeft:
		return Verdict{Result: NotWritten, Why: cmp.Or(o.Error, "left in place")}
	}
	switch tg.Kind {
	case cumulusdb.TraceGranule:
		for _, g := range o.Granules {
			if g.GranuleID != tg.ID {
				continue
			}
			v := Verdict{Result: g.Outcome, Status: g.Status, Why: g.Error}
			switch {
			case g.Outcome == recovery.Dropped:
				v.Why = droppedWhy(m, g.Status, st)
			case g.FilesError != "":
				v.Why = "its files fail (" + g.FilesError + "): the granule is written as failed"
			}
			return v
		}
	case cumulusdb.TraceExecution:
		if o.Execution != "" && o.Execution != recovery.Skipped {
			v := Verdict{Result: o.Execution, Status: cumulusStatus(o.Status)}
			if v.Result == recovery.Dropped {
				v.Why = droppedWhy(m, o.Status, st)
			}
			if v.Result == recovery.Failed || o.Result == recovery.Failed && v.Result != recovery.Written {
				return failed()
			}
			return v
		}
	case cumulusdb.TracePDR:
		if o.Pdr != "" && o.Pdr != recovery.Skipped {
			v := Verdict{Result: o.Pdr, Status: cumulusStatus(o.Status)}
			if v.Result == recovery.Dropped {
				v.Why = droppedWhy(m, o.Status, st)
			}
			return v
		}
	}
	if o.Result == recovery.Failed {
		return failed()
	}
	return Verdict{Result: NotWritten, Why: "the message writes nothing of this " + tg.Kind}
}

// cumulusStatus is a status as Cumulus writes it (recover reports a
// message's Step Functions status when it has no meta.status).
func cumulusStatus(s string) string { return cmp.Or(recovery.CumulusStatus(s), s) }

// finished are the statuses a running or queued write does not replace.
var finished = map[string]bool{"completed": true, "failed": true}

// droppedWhy says, from the message and the row as the messages before it
// leave it (st), which of the write rules dropped it (recover reports only
// that it was).
func droppedWhy(m *Message, status string, st *state) string {
	if st == nil {
		return "the write rules refused it"
	}
	row := "the row's"
	if st.by != "" {
		row = "the row the message of " + st.by + " wrote, whose"
	}
	if m.CreatedAt != nil && st.createdAt != nil && m.CreatedAt.Before(*st.createdAt) {
		return fmt.Sprintf("stale: its createdAt %s is older than %s created_at %s",
			m.CreatedAt.UTC().Format(time.RFC3339), row, st.createdAt.UTC().Format(time.RFC3339))
	}
	if (status == "running" || status == "queued") && finished[st.status] {
		if st.by != "" {
			return fmt.Sprintf("a %s write does not replace a finished (%s) row, which the message of %s wrote", status, st.status, st.by)
		}
		return fmt.Sprintf("a %s write does not replace a finished (%s) row", status, st.status)
	}
	return "the write rules refused it (the row is as new or newer)"
}

// writes is what the message would write for the record, in words.
func writes(tg Target, m *Message) string {
	v := m.Verdict
	if v.Status == "" {
		return "nothing of this " + tg.Kind
	}
	what := tg.Kind + " " + v.Status
	if m.Collection != nil && tg.Kind == cumulusdb.TraceGranule {
		what += " in " + *m.Collection
	}
	return what
}

// conclude is the trace in one line: what recover's order leaves of the
// record, and which message decides it. Keys are every message, in that
// order: the next command runs them as the trace did.
func conclude(tr Trace) Conclusion {
	ms := tr.Messages
	held := ""
	if len(tr.Rows) > 0 {
		held = "; the database holds it (" + tr.Rows[len(tr.Rows)-1].Status + ")"
	}
	if len(ms) == 0 {
		if held == "" {
			held = "; it is not in the database either"
		}
		return Conclusion{Kind: ConcludeNotInArchive, Message: -1, Keys: []string{},
			Text: "not in the archive: no write of it failed" + held}
	}
	last := func(result string) int {
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i].Verdict.Result == result {
				return i
			}
		}
		return -1
	}
	label := func(i int) string { return ms[i].Date + " in " + ms[i].Area + "/" }
	all := make([]string, len(ms))
	dropped := 0
	for i, m := range ms {
		all[i] = m.Key
		if m.Verdict.Result == recovery.Dropped {
			dropped++
		}
	}
	if i := last(recovery.Written); i >= 0 {
		text := fmt.Sprintf("in recover's order, the message of %s decides it: %s", label(i), ms[i].Writes)
		if after := ms[i+1:]; len(after) > 0 {
			text += " (after it: " + results(after) + ")"
		}
		return Conclusion{Kind: ConcludeWrite, Message: i, Keys: all, Text: text}
	}
	if i := last(recovery.Failed); i >= 0 {
		st := rowState(tr.Rows)
		if other := otherCollection(tr, ms[i], st); other != "" {
			return Conclusion{Kind: ConcludeRefused, Message: i, Keys: all,
				Text: "refused: another collection holds it (" + other + ")"}
		}
		why := ms[i].Verdict.Why
		if c := dla.ErrorClass(why); c != "" {
			why = c
		}
		return Conclusion{Kind: ConcludeFails, Message: i, Keys: all,
			Text: "no message would be written: the last that fails, of " + label(i) + ", fails with " + why}
	}
	if dropped == len(ms) {
		return Conclusion{Kind: ConcludeNewer, Message: len(ms) - 1, Keys: all,
			Text: "nothing in the archive would change the row: the database is newer"}
	}
	return Conclusion{Kind: ConcludeNothing, Message: -1, Keys: all,
		Text: "nothing in the archive would write it" + held}
}

// messages is n messages, in words.
func messages(n int) string {
	if n == 1 {
		return "1 message"
	}
	return fmt.Sprintf("%d messages", n)
}

// results counts the verdicts of ms in words ("1 failed, 2 dropped").
func results(ms []Message) string {
	var order []string
	n := map[string]int{}
	for _, m := range ms {
		if n[m.Verdict.Result] == 0 {
			order = append(order, m.Verdict.Result)
		}
		n[m.Verdict.Result]++
	}
	parts := make([]string, len(order))
	for i, r := range order {
		parts[i] = fmt.Sprintf("%d %s", n[r], r)
	}
	return strings.Join(parts, ", ")
}

// otherCollection is the collection that holds the traced granule when it
// is not the message's ("" when none does): the row's, or the collection
// a message before it wrote it in.
func otherCollection(tr Trace, m Message, st *state) string {
	if tr.Kind != cumulusdb.TraceGranule || m.Collection == nil {
		return ""
	}
	for _, before := range tr.Messages {
		if before.Key == m.Key {
			break
		}
		if before.Verdict.Result == recovery.Written && before.Collection != nil && *before.Collection != *m.Collection {
			return *before.Collection
		}
	}
	if st != nil && st.collection != "" && st.collection != *m.Collection {
		return st.collection
	}
	for _, r := range tr.Rows {
		if r.Collection != nil && *r.Collection != *m.Collection {
			return *r.Collection
		}
	}
	if strings.Contains(m.Verdict.Why, "already exists for granuleId") {
		return "another collection"
	}
	return ""
}

// collectionWarnings warns when messages of more than one collection name
// the traced granule (or the database holds it in a collection none of
// them is of): Cumulus keeps a granule id in one collection, the first
// written, and refuses the others' messages.
func collectionWarnings(tr Trace) []string {
	if tr.Kind != cumulusdb.TraceGranule {
		return nil
	}
	var colls []string
	count := map[string]int{}
	for _, m := range tr.Messages {
		c := deref(m.Collection)
		if c == "" {
			continue
		}
		if count[c] == 0 {
			colls = append(colls, c)
		}
		count[c]++
	}
	if len(colls) < 2 {
		return nil
	}
	parts := make([]string, len(colls))
	for i, c := range colls {
		parts[i] = fmt.Sprintf("%s (%s)", c, messages(count[c]))
	}
	w := fmt.Sprintf("messages of %d collections name granule %s: %s; Cumulus keeps a granule id in one collection, "+
		"the first that writes it, and refuses the other's messages, so the order they are recovered in decides which",
		len(colls), tr.ID, strings.Join(parts, ", "))
	for _, r := range tr.Rows {
		if c := deref(r.Collection); c != "" && count[c] == 0 {
			w += "; the database holds it in " + c
		}
	}
	return []string{w}
}
