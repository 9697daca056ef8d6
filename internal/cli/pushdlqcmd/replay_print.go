package pushdlqcmd

import (
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/workflow/pushreplay"
)

// MessageResult is one -o ndjson line per message.
type MessageResult struct {
	Type      string  `json:"type"`
	MessageID string  `json:"message_id"`
	Outcome   string  `json:"outcome"`
	ErrorCode *int    `json:"error_code"`
	Priority  *int    `json:"priority"`
	CreatedAt *string `json:"created_at"`
	// CreatedAtForm says how the body wrote createdAt: epoch_ms,
	// numeric_string or iso8601.
	CreatedAtForm *string `json:"created_at_form"`
	Target        *string `json:"target"`
	NewID         *string `json:"new_message_id"`
	Reason        *string `json:"reason"`
	Error         *string `json:"error"`
}

// printInterrupted says what an interrupted run (Ctrl-C, SIGTERM) left:
// nothing changed, when it stopped before its journal was opened; else the
// command that resumes it.
func printInterrupted(w io.Writer, opts *ReplayOptions, s pushreplay.Summary) {
	if s.Journal == nil {
		fmt.Fprintln(w, "interrupted before anything was sent: nothing changed; every message is released")
		return
	}
	fmt.Fprintf(w, "interrupted: %s sent, %s released; the journal is %s.\n"+
		"Resume the run (what the journal shows as sent is deleted from the DLQ, not sent again) with:\n  %s\n",
		output.Plural(s.Sent, "message"), output.Plural(s.Released, "message"), *s.Journal, resumeCommand(opts, *s.Journal, 0))
}

// printPlan is the plan on stderr, in its parts: the policy, the eligible
// messages by target, the ineligible ones and the messages not in the plan,
// the audit and the rate, and how the run ends here, if it does.
func printPlan(w io.Writer, opts *ReplayOptions, p *pushreplay.Plan) {
	printPlanPolicy(w, opts, p)
	printPlanTargets(w, opts, p)
	printPlanNotSent(w, opts, p)
	printPlanEnd(w, opts, p)
}

// printPlanPolicy is the plan's head: its source and round, the window as
// resolved instants, and the codes.
func printPlanPolicy(w io.Writer, opts *ReplayOptions, p *pushreplay.Plan) {
	policy := opts.Policy
	fmt.Fprintf(w, "\nPlan for %s\n", p.Source)
	if p.Round > 1 {
		fmt.Fprintf(w, "  round    %d, read on past SQS's in-flight limit: what this round read (the earlier rounds sent %d and parked %d)\n",
			p.Round, p.EarlierSent, p.EarlierParked)
	}
	// Two lines, so that the plan fits 80 columns.
	fmt.Fprintf(w, "  window   %s … %s\n           inclusive, on createdAt (epoch ms %d … %d)\n", isoMs(policy.Start), isoMs(policy.End), policy.Start, policy.End)
	if opts.since != nil {
		fmt.Fprintf(w, "           %s (now minus %s to now)\n", opts.since, opts.since.Given)
	}
	if opts.Window != "" {
		if a, b, _ := strings.Cut(opts.Window, "/"); pushpolicy.IsDateOnly(a) || pushpolicy.IsDateOnly(b) {
			fmt.Fprintf(w, "           a date alone means midnight UTC at the start of that day: the window ends at %s\n", isoMs(policy.End))
		}
	}

	fmt.Fprintf(w, "  codes    %s\n", policy.CodesString())
}

// printPlanTargets counts the eligible messages by code and priority, each
// row with its target queue and what checking it found.
func printPlanTargets(w io.Writer, opts *ReplayOptions, p *pushreplay.Plan) {
	fmt.Fprintf(w, "  scanned  %d\n", p.Scanned)
	fmt.Fprintf(w, "  eligible %d\n", p.Eligible)
	keys := make([]pushreplay.TargetKey, 0, len(p.ByTarget))
	for k := range p.ByTarget {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Code != keys[j].Code {
			return keys[i].Code < keys[j].Code
		}
		return keys[i].Priority < keys[j].Priority
	})
	unchecked := uncheckedTargets(p)
	for _, k := range keys {
		code, name := codeLabel(k.Code)
		note := ""
		if c, bad := p.Targets[k.Target]; bad && c.Missing {
			note = "  MISSING: " + pushreplay.ErrorReason(c.Err)
		} else if reason, ok := unchecked.reason(k.Target); ok {
			note = "  (not checked)"
			if unchecked.shared == "" {
				note = "  (not checked: " + reason + ")"
			}
		}
		fmt.Fprintf(w, "    %6d  code %s %-24s priority %-3d -> %s%s\n", p.ByTarget[k], code, name, k.Priority, sqsmove.Name(k.Target), note)
	}
	if unchecked != nil && unchecked.shared != "" && !opts.DryRun {
		// A dry run ends with this line as its error.
		fmt.Fprintf(w, "  not checked: %s\n", unchecked.shared)
	}
}

// printPlanNotSent counts what the plan does not send: the ineligible
// messages by reason, what the resumed run sent or left uncertain, the
// messages in flight elsewhere, delayed or still held, and the ones the
// replay guard holds back.
func printPlanNotSent(w io.Writer, opts *ReplayOptions, p *pushreplay.Plan) {
	action := "released untouched"
	if opts.Ineligible == "park" {
		action = "parked in the DLQ with DelaySeconds 900"
	}
	ineligible := maps.Clone(p.Ineligible)
	delete(ineligible, pushpolicy.ReasonHeldBack)
	fmt.Fprintf(w, "  ineligible %d (%s)\n", p.IneligibleTotal()-p.Ineligible[pushpolicy.ReasonHeldBack], action)
	for _, c := range byCount(ineligible, reasonLabel) {
		fmt.Fprintf(w, "    %6d  %s\n", c.Count, c.Name)
	}
	if p.AlreadySent > 0 {
		fmt.Fprintf(w, "  already sent by the resumed run: %d (deleted from the DLQ, not sent again)\n", p.AlreadySent)
	}
	if n := p.ResumedUncertain; n > 0 {
		fmt.Fprintf(w, "  uncertain in the resumed run: %d (sent, no reply known; sent again if still here: possible duplicates, listed in the summary)\n", n)
	}
	if n := p.InFlightElsewhere; n > 0 {
		fmt.Fprintf(w, "  in flight %d: another consumer or an interrupted run holds them; they are not in this plan\n", n)
	}
	if n := p.Delayed; n > 0 {
		fmt.Fprintf(w, "  delayed %d: delayed in the DLQ (DelaySeconds), they cannot be read yet; they are not in this plan\n", n)
	}
	if n := p.StillHeld; n > 0 {
		fmt.Fprintf(w, "  still held %d: the interrupted run held them and they are not back in the DLQ; they are not in this plan\n", n)
	}
	if n := p.Ineligible[pushpolicy.ReasonHeldBack]; n > 0 || opts.MaxReplays > 0 {
		printHeldBack(w, opts, p, n)
	}
}

// printPlanEnd is the plan's last lines: where the audit record goes, the
// rate, and the end of a dry run or of a run with nothing to replay.
func printPlanEnd(w io.Writer, opts *ReplayOptions, p *pushreplay.Plan) {
	switch {
	case opts.DryRun:
	case opts.Audit.NoAudit:
		fmt.Fprintln(w, "  audit: none (--no-audit)")
	case opts.audit != nil:
		fmt.Fprintf(w, "  %s\n", opts.audit.planLine())
	}
	if opts.Rate > 0 && p.Eligible > 0 {
		fmt.Fprintf(w, "  rate     %g msg/s (about %s)\n", opts.Rate, time.Duration(float64(p.Eligible)/opts.Rate*float64(time.Second)).Round(time.Second))
	}
	switch {
	case opts.DryRun:
		fmt.Fprintln(w, "dry run: nothing sent; every message is released")
		if p.Missing > 0 {
			fmt.Fprintf(w, "dry run: %s of the plan %s not exist; a replay would fail their messages\n",
				output.Plural(p.Missing, "target queue"), map[bool]string{true: "does", false: "do"}[p.Missing == 1])
		}
	case p.Nothing:
		if n := p.InFlightElsewhere + p.StillHeld; n > 0 {
			verb := map[bool]string{true: "is", false: "are"}[n == 1]
			fmt.Fprintf(w, "nothing visible to replay, but %s %s in flight: another consumer or an interrupted run holds them; run again once they are visible\n", output.Plural(n, "message"), verb)
		} else if n := p.Delayed; n > 0 {
			verb := map[bool]string{true: "is", false: "are"}[n == 1]
			fmt.Fprintf(w, "nothing visible to replay, but %s %s delayed in the DLQ (DelaySeconds): they cannot be read yet; run again once they are visible\n", output.Plural(n, "message"), verb)
		} else {
			fmt.Fprintln(w, "nothing to replay")
		}
	}
}

// messageLine is the -o ndjson line of a message's fate.
func messageLine(m pushreplay.Fate) MessageResult {
	line := MessageResult{Type: "message", MessageID: m.MessageID, Outcome: string(m.Outcome)}
	c := m.Command
	if c.HasErrorCode {
		line.ErrorCode = &c.ErrorCode
	}
	if c.HasPriority {
		line.Priority = &c.Priority
	}
	if c.HasCreatedAt {
		s, form := isoMs(c.CreatedAt), string(c.CreatedAtForm)
		line.CreatedAt, line.CreatedAtForm = &s, &form
	}
	if m.Target != "" {
		line.Target = &m.Target
	}
	if m.NewID != "" {
		line.NewID = &m.NewID
	}
	if m.Outcome == pushreplay.OutcomeReleased {
		reason := string(m.Reason)
		line.Reason = &reason
	}
	if m.Err != nil {
		e := m.Err.Error()
		line.Error = &e
	}
	if m.DeleteFailed != nil {
		e := "sent, but not deleted from the DLQ: " + m.DeleteFailed.Error()
		line.Error = &e
	}
	return line
}

// printUnfinished says on stderr what the replay left undone: the failed
// messages by target and reason, the ones whose hold was lost, and the
// possible duplicates.
func printUnfinished(w io.Writer, opts *ReplayOptions, s pushreplay.Summary) {
	if len(s.Failures) > 0 {
		// The rows count failed parks too (not_parked, target the DLQ).
		n := 0
		for _, r := range s.Failures {
			n += r.Count
		}
		fmt.Fprintf(w, "failed %d; they stay in the DLQ:\n", n)
		for _, r := range s.Failures {
			fmt.Fprintf(w, "  %s: %s failed: %s\n", sqsmove.Name(r.Target), output.Plural(r.Count, "message"), r.Reason)
		}
	}
	if ids := s.HoldLostIDs; len(ids) > 0 {
		fmt.Fprintf(w, "hold lost %d: the run no longer held them when their turn came (paused past --visibility-timeout %s, or another consumer received them); not sent, not deleted, they are in the DLQ again or another consumer has them:\n",
			len(ids), opts.Queue.Visibility)
		printIDs(w, ids)
	}
	if n := s.PossibleDuplicates; n > 0 {
		fmt.Fprintf(w, "possible duplicates %d: sent with no reply known, or sent while the hold on them was lost, so they may be in their target twice (or in the target and the DLQ):\n", n)
		printIDs(w, s.PossibleDuplicateIDs)
	}
}

// printIDs lists up to 20 message ids, one a line.
func printIDs(w io.Writer, ids []string) {
	for _, id := range ids[:min(len(ids), 20)] {
		fmt.Fprintf(w, "  %s\n", id)
	}
	if len(ids) > 20 {
		fmt.Fprintf(w, "  … and %d more, all in the summary and the journal\n", len(ids)-20)
	}
}

// writeReplaySummary writes the summary record on stdout: the last line
// of -o ndjson, one JSON object, or a table.
func writeReplaySummary(out io.Writer, stream *output.JSONStream, format string, s pushreplay.Summary) error {
	switch format {
	case "ndjson":
		if err := stream.Write(s); err != nil {
			return err
		}
		return stream.Close()
	case "json":
		return output.WriteJSON(out, s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "scanned             %d\n", s.Scanned)
	fmt.Fprintf(&b, "eligible            %d\n", s.Eligible)
	fmt.Fprintf(&b, "sent                %d\n", s.Sent)
	fmt.Fprintf(&b, "parked              %d\n", s.Parked)
	fmt.Fprintf(&b, "released            %d\n", s.Released)
	fmt.Fprintf(&b, "failed              %d\n", s.Failed)
	fmt.Fprintf(&b, "delete failed       %d\n", s.DeleteFailed)
	fmt.Fprintf(&b, "skipped duplicates  %d\n", s.SkippedDuplicates)
	if s.HeldBack > 0 {
		fmt.Fprintf(&b, "held back           %d (replayed --max-replays times already; they stay in the DLQ)\n", s.HeldBack)
		for _, h := range s.HeldBackNotifications {
			fmt.Fprintf(&b, "  %s  replayed %s already, %s held back\n", output.Escape(h.NotificationID), output.Plural(h.Replays, "time"), output.Plural(h.Messages, "message"))
		}
	}
	// Counts that are shown only when not zero.
	for _, c := range []struct {
		label string
		n     int
	}{
		{"uncertain", s.Uncertain}, {"possible duplicates", s.PossibleDuplicates}, {"in flight elsewhere", s.InFlightElsewhere},
		{"hold lost", s.HoldLost}, {"not parked", s.NotParked}, {"delayed", s.Delayed}, {"still held", s.StillHeld}, {"abandoned", s.Abandoned},
		{"release failed", s.ReleaseFailed},
	} {
		if c.n > 0 {
			fmt.Fprintf(&b, "%-19s %d\n", c.label, c.n)
		}
	}
	if s.Journal != nil {
		fmt.Fprintf(&b, "journal             %s\n", *s.Journal)
	}
	if s.DryRun {
		b.WriteString("dry run             nothing was sent\n")
	}
	_, err := fmt.Fprint(out, b.String())
	return err
}

// declinedRoundLine is what a declined later round of a park replay says:
// that round's messages are released, the earlier rounds' moves stay.
func declinedRoundLine(p *pushreplay.Plan) string {
	return fmt.Sprintf("nothing more sent: the %s round %d read %s released; what the earlier rounds sent or parked stays so",
		output.Plural(p.Scanned, "message"), p.Round, output.Agree(p.Scanned, "is", "are"))
}
