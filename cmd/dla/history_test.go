package main_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	dlalayout "github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/testsupport"
)

const historyKey = "demo/dead-letter-archive/sqs/2024-03-02/ingest-1"

// historyArchive is a copy of the sample archive with the records of
// three runs: a recover that finished (its reason a long ticket title), a
// recover killed part way (no finished record), and a recover through the
// Cumulus API, each naming historyKey among its items.
func historyArchive(t *testing.T) string {
	t.Helper()
	dir := copyOfSample(t)
	store, err := archive.NewLocal(filepath.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := dlalayout.Layout{Stack: "demo"}.AuditPrefix()
	arn := "arn:aws:sts::123456789012:assumed-role/ops-oncall/alice"
	db := &audit.Database{Host: "cumulus-db.cluster-abc.us-east-1.rds.amazonaws.com", Port: "5432", Name: "cumulus", Generation: "v21"}
	runs := []struct {
		started  audit.Started
		items    []audit.Item
		finished *audit.Finished
	}{
		{audit.Started{Tool: "dla", Verb: "recover", StartedAt: time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC),
			Argv: []string{"dla", "recover", "--date", "2024-03-02", "--yes"}, Reason: "INC-4411 granules of MOD09GQ stuck after the RDS failover of the night",
			Actor:  audit.Actor{AWSARN: &arn, OSUser: "alice", Host: "bastion-1"},
			Target: audit.Target{Archive: "s3://my-internal-bucket/demo", Database: db}, Selection: map[string]any{"date": "2024-03-02"}, Plan: map[string]int{"objects": 2}},
			[]audit.Item{{Key: historyKey, Result: "written", Action: "deleted", Granules: []string{"G1"}, Execution: "arn:aws:states:us-east-1:1:execution:sm:ingest-1"},
				{Key: "demo/dead-letter-archive/sqs/2024-03-02/ingest-2", Result: "failed", Action: "moved", MovedTo: "demo/dead-letter-archive/failed-sqs/2024-03-02/ingest-2"}},
			&audit.Finished{Counts: map[string]int{"written": 1, "failed": 1, "deleted": 1, "moved": 1}, ExitCode: 3}},
		{audit.Started{Tool: "dla", Verb: "recover", StartedAt: time.Date(2026, 12, 2, 3, 10, 0, 0, time.UTC),
			Argv: []string{"dla", "recover", "--failed", "--yes"}, Actor: audit.Actor{OSUser: "bob", Host: "laptop", AWSNote: "no AWS identity"},
			Target: audit.Target{Archive: "s3://my-internal-bucket/demo", Database: db}, Selection: map[string]any{"failed": true}},
			[]audit.Item{{Key: "demo/dead-letter-archive/failed-sqs/2024-03-02/ingest-2", Result: "failed", Action: "left", MovedTo: "demo/dead-letter-archive/failed-sqs/2024-03-02/ingest-2"}},
			nil},
		{audit.Started{Tool: "dla", Verb: "recover", StartedAt: time.Date(2026, 12, 2, 8, 30, 0, 0, time.UTC),
			Argv: []string{"dla", "recover", "--via-api", "https://example.com/api", "--yes"}, Reason: "INC-4412",
			Actor:  audit.Actor{AWSARN: &arn, OSUser: "alice", Host: "bastion-1"},
			Target: audit.Target{Archive: "s3://my-internal-bucket/demo", API: "https://example.com/api"}, Plan: map[string]int{"objects": 1}},
			[]audit.Item{{Key: historyKey, Action: "staged", MovedTo: "demo/dead-letter-archive/recover-staging/x/sqs/2024-03-02/ingest-1"},
				{Key: historyKey, Result: "written", Action: "deleted by Cumulus"}},
			&audit.Finished{Counts: map[string]int{"staged": 1, "succeeded": 1}}},
	}
	for _, r := range runs {
		rec, err := audit.Begin(ctx, store, base, r.started, audit.Options{ChunkLines: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range r.items {
			rec.Add(it)
		}
		if r.finished == nil {
			// Killed: its items reach the store, no finished record does.
			deadline := time.Now().Add(5 * time.Second)
			for {
				got, _, _ := audit.List(ctx, store, base, audit.Filter{})
				n := 0
				for _, g := range got {
					if g.RunID == rec.RunID() {
						n = len(g.Chunks)
					}
				}
				if n == len(r.items) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the killed run's chunks were not written")
				}
				time.Sleep(10 * time.Millisecond)
			}
			continue
		}
		r.finished.EndedAt = r.started.StartedAt.Add(2 * time.Minute)
		if err := rec.Finish(ctx, *r.finished); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// dla history on a terminal of 80 and 200 columns (and 120, NO_COLOR,
// TERM=dumb, piped): each run a row fitted to the width, newest first,
// the killed one "did not finish"; with --key, what each run did to it.
func historyVerbs() []testsupport.PTYVerb {
	return []testsupport.PTYVerb{
		{Name: "history", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			return []string{"history", "--archive", historyArchive(t)}, nil
		}, Codes: []int{0}, Colour: true, Check: func(t *testing.T, r testsupport.PTYResult) {
			plain := plainScreen(r.Screen)
			wants := []string{"WHEN (UTC)", "2026-12-02 08:30", "2026-12-02 03:10", "2026-12-01 22:00", "did not finish",
				"role/ops-", "bob@laptop", "INC-4412", "3 runs, newest first"}
			if r.Cols == 200 { // room for every column, and the whole actor
				wants = append(wants, "role/ops-oncall/alice", "recover → https://example.com/api", "did not finish: 1 item recorded (1 left)")
			}
			for _, want := range wants {
				if !strings.Contains(plain, want) {
					t.Errorf("%d columns: the screen lacks %q:\n%s", r.Cols, want, plain)
				}
			}
			if a, b := strings.Index(plain, "2026-12-02 08:30"), strings.Index(plain, "2026-12-01 22:00"); a > b {
				t.Errorf("%d columns: not newest first:\n%s", r.Cols, plain)
			}
			if r.Cols == 80 || r.Cols == 200 {
				t.Logf("dla history at %d columns:\n%s", r.Cols, plain)
			}
		}},
		{Name: "history-key", Run: func(t *testing.T) ([]string, []testsupport.PTYAnswer) {
			return []string{"history", "--archive", historyArchive(t), "--key", "sqs/2024-03-02/ingest-1"}, nil
		}, Codes: []int{0}, Colour: true, Check: func(t *testing.T, r testsupport.PTYResult) {
			plain := plainScreen(r.Screen)
			if !strings.Contains(plain, "2 runs, newest first") || strings.Contains(plain, "2026-12-02 03:10") {
				t.Errorf("%d columns: --key lists other runs than the two that touched it:\n%s", r.Cols, plain)
			}
		}},
	}
}

func TestHistoryOnATerminal(t *testing.T) {
	for _, v := range historyVerbs() {
		t.Run(v.Name, func(t *testing.T) { testsupport.RunOnTerminals(t, dlaBin, v) })
	}
}

// dla history -o ndjson: one run a line, deadletter.history/v1, with
// every field the schema promises (ended_at and exit_code null for the
// run that did not finish); with a record filter, that record's items.
func TestHistoryNDJSONLinesAreDeadletterHistoryV1(t *testing.T) {
	dir := historyArchive(t)
	out, err := exec.Command(dlaBin, "history", "--archive", dir, "-o", "ndjson").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out)
	}
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"schema", "run_id", "verb", "started_at", "ended_at", "finished", "actor", "reason", "argv", "target", "counts", "exit_code"} {
			if _, ok := m[f]; !ok {
				t.Errorf("line %d lacks %s: %s", i, f, l)
			}
		}
		actor, _ := m["actor"].(map[string]any)
		for _, f := range []string{"aws_arn", "os_user", "host"} {
			if _, ok := actor[f]; !ok {
				t.Errorf("line %d's actor lacks %s: %s", i, f, l)
			}
		}
		if m["schema"] != audit.HistorySchema || m["verb"] != "recover" {
			t.Errorf("line %d: %s", i, l)
		}
		unfinished := m["started_at"] == "2026-12-02T03:10:00Z"
		if unfinished != (m["ended_at"] == nil) || unfinished != (m["exit_code"] == nil) || unfinished == (m["finished"] == true) {
			t.Errorf("line %d: ended_at, exit_code and finished disagree with whether it finished: %s", i, l)
		}
		if _, ok := m["items"]; ok {
			t.Errorf("line %d holds items without a record filter", i)
		}
	}
	out, err = exec.Command(dlaBin, "history", "--archive", dir, "-o", "ndjson", "--key", historyKey).Output()
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("--key: %d lines, want 2:\n%s", len(lines), out)
	}
	for _, l := range lines {
		var h audit.HistoryLine
		if err := json.Unmarshal([]byte(l), &h); err != nil || len(h.Items) == 0 {
			t.Fatalf("%v: %s", err, l)
		}
		for _, it := range h.Items {
			if it.Key != historyKey {
				t.Errorf("an item of another record: %+v", it)
			}
		}
	}
	for _, f := range [][]string{{"--granule", "G1"}, {"--execution", "ingest-1"}} {
		out, err := exec.Command(dlaBin, append([]string{"history", "--archive", dir, "-o", "ndjson"}, f...)...).Output()
		if err != nil || strings.Count(string(out), "\n") != 1 || !strings.Contains(string(out), `"items":[`) {
			t.Errorf("%v: %v:\n%s", f, err, out)
		}
	}
}
