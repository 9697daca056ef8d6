package pushdlqcmd

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// queueCount is the DLQ's visible plus in-flight messages.
func queueCount(t *testing.T, c *sqs.Client, url string) (visible, inFlight int) {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	visible, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	inFlight, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible, inFlight
}

// pushdlq trace lists every DLQ message of one notification on fauxqs,
// consumes nothing (every message visible again once it is done), judges
// each by the window and codes given (or the ones covering it), and its
// printed replay, run as printed, is a dry run that would send them.
func TestTraceNotification(t *testing.T) {
	c := testsupport.SQSClient(t)
	dlq, base := testsupport.NewPushQueues(t, c, "tt", 1, 2)
	at := func(s string) int64 {
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return ts.UnixMilli()
	}
	msg := func(n string, created int64, code, prio int) string {
		return `{"action":"push","notificationId":"` + n + `","priority":` + strconv.Itoa(prio) + `,"createdAt":` + strconv.FormatInt(created, 10) +
			`,"errorCode":` + strconv.Itoa(code) + `,"errorMessage":"failed"}`
	}
	bodies := []string{
		msg("n-1", at("2025-11-14T08:31:00Z"), 1004, 1),
		msg("n-1", at("2025-11-14T08:40:00Z"), 1004, 2),
		msg("n-1", at("2025-11-15T10:00:00Z"), 2003, 1),
		msg("n-2", at("2025-11-14T08:35:00Z"), 1004, 1),
		msg("n-3", at("2025-11-14T10:00:00Z"), 1004, 1),
	}
	testsupport.SendBodies(t, c, dlq, bodies, nil)

	code, out, stderr := runPushdlq(t, "trace", "--dlq", dlq, "--notification", "n-1", "--queue-base-url", base,
		"--window", "2025-11-14T08:30:00Z/2025-11-14T09:00:00Z", "--codes", "1004", "-o", "json", "--visibility-timeout", "30s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep TraceReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Schema != TraceSchema || rep.Scanned != 5 || len(rep.Messages) != 3 || rep.Replayed != 2 || rep.Others != 1 || rep.Command == nil {
		t.Fatalf("trace: %+v", rep)
	}
	for i, want := range []struct {
		code, prio int
		replayed   bool
		reason     string
	}{{1004, 1, true, ""}, {1004, 2, true, ""}, {2003, 1, false, "error code not selected"}} {
		m := rep.Messages[i]
		if *m.Code != want.code || *m.Priority != want.prio || m.Replayed != want.replayed || m.Reason != want.reason || m.ReceiveCount < 1 {
			t.Errorf("message %d: %+v", i, m)
		}
	}
	if v, f := queueCount(t, c, dlq); v != 5 || f != 0 {
		t.Errorf("after trace: %d visible, %d in flight; want 5 and 0 (nothing consumed, every message released)", v, f)
	}

	// The printed replay, run as printed: a dry run that finds the two
	// messages of n-1 and the one of n-2 eligible, and sends nothing.
	words, err := shellword.Split(*rep.Command)
	if err != nil || words[0] != "pushdlq" || words[len(words)-1] != "--dry-run" {
		t.Fatalf("%q: %v", *rep.Command, err)
	}
	code, out, stderr = runPushdlq(t, append(words[1:], "--visibility-timeout", "30s")...)
	if code != 0 || !strings.Contains(out+stderr, "eligible 3") {
		t.Errorf("%s: exit %d:\n%s\n%s", *rep.Command, code, out, stderr)
	}
	if v, f := queueCount(t, c, dlq); v != 5 || f != 0 {
		t.Errorf("after the dry run: %d visible, %d in flight", v, f)
	}

	// Without a window: the one covering n-1's messages, every one replayed.
	code, out, stderr = runPushdlq(t, "trace", "--dlq", dlq, "--notification", "n-1", "--queue-base-url", base)
	if code != 0 || !strings.Contains(out, "3 of 3 would be replayed with --window 2025-11-14T08:31:00.000Z/2025-11-15T10:00:00.000Z --codes 1004,2003") ||
		!strings.Contains(out, "\n    pushdlq replay --dlq ") {
		t.Errorf("covering: exit %d:\n%s\n%s", code, out, stderr)
	}
	if code, _, stderr = runPushdlq(t, "trace", "--dlq", dlq, "--notification", "n-1", "--window", "2025-11-14T08:30:00Z/2025-11-14T09:00:00Z"); code != 2 ||
		!strings.Contains(stderr, "--window and --codes go together") {
		t.Errorf("--window alone: exit %d: %s", code, stderr)
	}
}

// The replay a trace prints runs as printed, whatever the notification's
// messages: one message (or several with one createdAt) made the covering
// window START/START, which replay refuses ("the window must start before
// it ends"); an errorCode of -1 made it '--codes -1', which --codes
// refuses; and a --window of more than 24 hours with --codes '*', which
// trace judged, printed a replay that refuses it without
// --allow-wide-window. Each printed command must be a dry run that exits
// 0 and finds this notification's messages it says would be replayed.
func TestTracePrintedReplayRunsForEveryNotification(t *testing.T) {
	c := testsupport.SQSClient(t)
	dlq, base := testsupport.NewPushQueues(t, c, "tp", 1, 2)
	at := time.Date(2025, 11, 14, 8, 31, 0, 0, time.UTC).UnixMilli()
	msg := func(n string, created int64, code string) string {
		return `{"action":"push","notificationId":"` + n + `","priority":1,"createdAt":` + strconv.FormatInt(created, 10) +
			`,"errorCode":` + code + `,"errorMessage":"failed"}`
	}
	testsupport.SendBodies(t, c, dlq, []string{
		msg("n-one", at, "1004"),
		msg("n-same", at+5000, "1004"), msg("n-same", at+5000, "1004"),
		msg("n-neg", at+10000, "-1"), msg("n-neg", at+20000, "1004"),
		msg("n-wide", at, "2003"),
	}, nil)
	for _, c := range []struct {
		name     string
		args     []string
		replayed int
	}{
		{"one message", []string{"--notification", "n-one"}, 1},
		{"one createdAt", []string{"--notification", "n-same"}, 2},
		{"a negative code", []string{"--notification", "n-neg"}, 1},
		{"'*' over 48 hours", []string{"--notification", "n-wide", "--window", "2025-11-13T00:00:00Z/2025-11-15T00:00:00Z", "--codes", "*"}, 1},
	} {
		args := append([]string{"trace", "--dlq", dlq, "--queue-base-url", base, "-o", "json", "--visibility-timeout", "30s"}, c.args...)
		code, out, stderr := runPushdlq(t, args...)
		var rep TraceReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
			t.Fatalf("%s: exit %d: %v\n%s", c.name, code, err, stderr)
		}
		if rep.Replayed != c.replayed || rep.Command == nil {
			t.Errorf("%s: %d replayed, command %v; want %d and a command", c.name, rep.Replayed, rep.Command, c.replayed)
			continue
		}
		words, err := shellword.Split(*rep.Command)
		if err != nil {
			t.Fatalf("%s: %q: %v", c.name, *rep.Command, err)
		}
		code, out, stderr = runPushdlq(t, append(words[1:], "--visibility-timeout", "30s")...)
		if code != 0 {
			t.Errorf("%s: the printed %s: exit %d:\n%s%s", c.name, *rep.Command, code, out, stderr)
		}
	}
	if v, f := queueCount(t, c, dlq); v != 6 || f != 0 {
		t.Errorf("after the traces: %d visible, %d in flight; want 6 and 0", v, f)
	}
}

// Issue 38 item 9: trace sends nothing, yet its text said "→ replayed to
// …P1" for what a replay would do, and "1 message of 2 read belong to"
// with the verb in the plural. Each verdict now says "would", and the
// count agrees with its verb.
func TestTraceTextSaysWhatAReplayWouldDoInWordsThatAgree(t *testing.T) {
	c := testsupport.SQSClient(t)
	dlq, base := testsupport.NewPushQueues(t, c, "tw", 1, 2)
	at := time.Date(2025, 11, 14, 8, 31, 0, 0, time.UTC).UnixMilli()
	msg := func(n, code string) string {
		return `{"action":"push","notificationId":"` + n + `","priority":1,"createdAt":` + strconv.FormatInt(at, 10) +
			`,"errorCode":` + code + `,"errorMessage":"failed"}`
	}
	testsupport.SendBodies(t, c, dlq, []string{msg("n-one", "1004"), msg("n-other", "1004")}, nil)
	code, out, stderr := runPushdlq(t, "trace", "--dlq", dlq, "--queue-base-url", base, "--notification", "n-one", "--visibility-timeout", "30s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "→ would be replayed to "+base+"P1") || strings.Contains(out, "→ replayed") {
		t.Errorf("the verdict does not say what a replay would do:\n%s", out)
	}
	if !strings.Contains(stderr, "1 message of 2 read belongs to notification n-one") {
		t.Errorf("the count does not agree with its verb:\n%s", stderr)
	}
	code, out, stderr = runPushdlq(t, "trace", "--dlq", dlq, "--queue-base-url", base, "--notification", "n-one", "--window", "2025-11-14T08:00:00Z/2025-11-14T09:00:00Z", "--codes", "2003", "--visibility-timeout", "30s")
	if code != 0 || !strings.Contains(out, "→ would not be replayed: error code not selected") {
		t.Errorf("exit %d; the verdict of a message not selected:\n%s%s", code, out, stderr)
	}
}

// closedStdout fails every write as a closed pipe does.
type closedStdout struct{}

func (closedStdout) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// A closed stdout stops trace's printing, never its release: every
// message it received is visible again, none consumed, and, as for every
// command that only prints, the exit is a quiet 0 (issue 38 item 5: the
// same exit whether or not a write found the pipe closed).
func TestTraceWithStdoutClosedReleasesEveryMessage(t *testing.T) {
	c := testsupport.SQSClient(t)
	dlq, base := testsupport.NewPushQueues(t, c, "tc", 1, 2)
	var bodies []string
	for i := range 12 {
		bodies = append(bodies, `{"action":"push","notificationId":"n-`+strconv.Itoa(i%3)+`","priority":1,"createdAt":1763109060000,"errorCode":1004,"errorMessage":"failed"}`)
	}
	testsupport.SendBodies(t, c, dlq, bodies, nil)
	for _, format := range []string{"json", "text"} {
		ios, _, _, errOut := iostreams.Test()
		ios.Out = closedStdout{}
		f := NewFactory(ios, func(string) string { return "" })
		f.SQS = func(context.Context) (sqsmove.API, string, error) { return c, "test SQS", nil }
		code := Run(context.Background(), f, []string{"trace", "--dlq", dlq, "--notification", "n-1", "--queue-base-url", base,
			"-o", format, "--visibility-timeout", "30s"})
		if code != 0 || strings.Contains(errOut.String(), "stdout was closed") {
			t.Errorf("-o %s: exit %d with stdout closed, want a quiet 0: %s", format, code, errOut.String())
		}
		if v, fl := queueCount(t, c, dlq); v != 12 || fl != 0 {
			t.Errorf("-o %s: after trace with stdout closed: %d visible, %d in flight; want 12 and 0", format, v, fl)
		}
	}
}
