package dlacmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/trace"
)

// traceTemplate is the sample archive's bare Cumulus message: the traced
// archives' messages are it with their execution, status, start time,
// collection and one granule set.
const traceTemplate = sampleArchive + "/dead-letter-archive/sqs/02b8475c-31a7-4630-8456-99b85d02dc3c.json"

// traceMessage is a Cumulus message of one granule.
func traceMessage(t *testing.T, exec, status string, start time.Time, collection, version, granule string) []byte {
	t.Helper()
	raw, err := os.ReadFile(traceTemplate)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	cm := m["cumulus_meta"].(map[string]any)
	cm["execution_name"], cm["workflow_start_time"] = exec, start.UnixMilli()
	meta := m["meta"].(map[string]any)
	meta["status"] = status
	coll := meta["collection"].(map[string]any)
	coll["name"], coll["version"] = collection, version
	g := m["payload"].(map[string]any)["granules"].([]any)[0].(map[string]any)
	g["granuleId"], g["dataType"], g["version"] = granule, collection, version
	g["files"] = []any{}
	m["payload"].(map[string]any)["granules"] = []any{g}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// traceRowCount counts the rows of every table a write touches.
func traceRowCount(t *testing.T, dbURL string) int {
	t.Helper()
	return testsupport.QueryInt(t, dbURL, `SELECT (SELECT count(*) FROM executions) + (SELECT count(*) FROM granules)
		+ (SELECT count(*) FROM pdrs) + (SELECT count(*) FROM files) + (SELECT count(*) FROM granules_executions)`)
}

// traceBin is the folder of a build of dla, for running printed commands
// through bash.
func traceBin(t *testing.T) string {
	t.Helper()
	return filepath.Dir(testsupport.Binary(t, "github.com/deadletter/deadletter/cmd/dla", "DLA_E2E_BIN"))
}

// bashPrinted runs a printed command as an operator pastes it, through
// bash -c, with the built dla first on PATH.
func bashPrinted(t *testing.T, command string, env ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Env = append(append(os.Environ(), "PATH="+traceBin(t)+":"+os.Getenv("PATH"), "AWS_EC2_METADATA_DISABLED=true"), env...)
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// resultOf is what recover's piped output says of the granule in the
// object key: the "granule ID RESULT" line under the key's line, else the
// object's own result (its first word).
func resultOf(stdout, key, granule string) string {
	lines := strings.Split(stdout, "\n")
	for i, l := range lines {
		if !strings.Contains(l+" ", " "+key+" ") {
			continue
		}
		for _, g := range lines[i+1:] {
			if !strings.HasPrefix(g, " ") {
				break
			}
			if f := strings.Fields(g); len(f) == 3 && f[0] == "granule" && f[1] == granule {
				return f[2]
			}
		}
		return strings.Fields(l)[0]
	}
	return ""
}

// One granule in each situation of issue 33, against the real PostgreSQL
// (v21 on 15 by default; DEADLETTER_TEST_CUMULUS=v22 with the 17 URL for
// v22): missing from the database, stuck in running with a newer completed
// message, newer in the database than every message, held by another
// collection, and never failed. The rows the database holds are written by
// recover itself from a setup archive. Each conclusion is checked, and its
// printed command, run through bash as printed, does what it says; trace
// changes no row.
func TestTraceFiveSituations(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	env := map[string]string{"DATABASE_URL": db, "DEADLETTER_NO_PROMPT": "1"}
	day := func(d int, h int) time.Time { return time.Date(2024, 3, d, h, 0, 0, 0, time.UTC) }

	// What the database holds: written by recover.
	setup := t.TempDir()
	writeObject(t, setup, "sqs/2024-03-01/stuck-run-1", traceMessage(t, "stuck-run", "running", day(1, 8), "MOD09GQ", "006", "G.STUCK"))
	writeObject(t, setup, "sqs/2024-03-05/newer-done-1", traceMessage(t, "newer-done", "completed", day(5, 8), "MOD09GQ", "006", "G.NEWER"))
	writeObject(t, setup, "sqs/2024-03-01/other-done-1", traceMessage(t, "other-done", "completed", day(1, 8), "MOD09A1", "061", "G.OTHER"))
	writeObject(t, setup, "sqs/2024-03-01/fine-done-1", traceMessage(t, "fine-done", "completed", day(1, 9), "MOD09GQ", "006", "G.FINE"))
	if r := run(t, false, env, "", "recover", "--archive", filepath.Join(setup, "demo"), "--offline", "--yes"); r.code != 0 {
		t.Fatalf("setting up the rows: exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}

	// The archive traced.
	root := t.TempDir()
	writeObject(t, root, "sqs/2024-03-02/missing-done-1", traceMessage(t, "missing-done", "completed", day(2, 8), "MOD09GQ", "006", "G.MISSING"))
	writeObject(t, root, "sqs/2024-03-01/stuck-run-2", traceMessage(t, "stuck-run", "running", day(1, 8), "MOD09GQ", "006", "G.STUCK"))
	writeObject(t, root, "failed-sqs/2024-03-02/stuck-done-1", traceMessage(t, "stuck-done", "completed", day(2, 8), "MOD09GQ", "006", "G.STUCK"))
	writeObject(t, root, "sqs/2024-03-01/newer-run-1", traceMessage(t, "newer-run", "running", day(1, 8), "MOD09GQ", "006", "G.NEWER"))
	writeObject(t, root, "sqs/2024-03-02/newer-done-2", traceMessage(t, "newer-done-2", "completed", day(2, 8), "MOD09GQ", "006", "G.NEWER"))
	writeObject(t, root, "sqs/2024-03-03/other-done-2", traceMessage(t, "other-done-2", "completed", day(3, 8), "MOD09GQ", "006", "G.OTHER"))
	archive := filepath.Join(root, "demo")

	before := traceRowCount(t, db)
	r := run(t, false, env, "", "trace", "--archive", archive, "--offline", "-o", "json",
		"--granule", "G.MISSING", "--granule", "G.STUCK", "--granule", "G.NEWER", "--granule", "G.OTHER", "--granule", "G.FINE")
	if r.code != 0 {
		t.Fatalf("trace: exit %d: %s", r.code, r.stderr)
	}
	if after := traceRowCount(t, db); after != before {
		t.Fatalf("trace changed the rows: %d before, %d after", before, after)
	}
	var rep TraceReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if rep.Schema != TraceSchema || len(rep.Records) != 5 {
		t.Fatalf("schema %q, %d records", rep.Schema, len(rep.Records))
	}
	byID := map[string]TraceRecord{}
	for _, rec := range rep.Records {
		byID[rec.ID] = rec
		t.Logf("%s: %s (%d rows, %d messages)\n  %s", rec.ID, rec.Conclusion.Text, len(rec.Rows), len(rec.Messages), deref(rec.Command))
	}
	key := func(rel string) string { return "demo/dead-letter-archive/" + rel }
	dbEnv := "DATABASE_URL=" + db

	// Missing from the database: its one message would be written.
	m := byID["G.MISSING"]
	if len(m.Rows) != 0 || len(m.Messages) != 1 || m.Conclusion.Kind != trace.ConcludeWrite ||
		m.Conclusion.Text != "in recover's order, the message of 2024-03-02 in sqs/ decides it: granule completed in MOD09GQ___006" {
		t.Errorf("missing: %+v", m.Trace)
	} else if out, code := bashPrinted(t, *m.Command, dbEnv); code != 0 || resultOf(out, key("sqs/2024-03-02/missing-done-1"), "G.MISSING") != "written" {
		t.Errorf("missing: %s: exit %d:\n%s", *m.Command, code, out)
	}

	// Stuck in running, a newer completed message in failed-sqs/: that one
	// would be written, the running one not.
	s := byID["G.STUCK"]
	if len(s.Rows) != 1 || s.Rows[0].Status != "running" || len(s.Messages) != 2 || s.Conclusion.Kind != trace.ConcludeWrite ||
		s.Messages[1].Area != "failed-sqs" || s.Messages[1].Verdict.Result != "written" || s.Messages[1].Verdict.Status != "completed" ||
		s.Conclusion.Text != "in recover's order, the message of 2024-03-02 in failed-sqs/ decides it: granule completed in MOD09GQ___006" {
		t.Errorf("stuck: %+v", s.Trace)
	} else if out, code := bashPrinted(t, *s.Command, dbEnv); code != 0 || resultOf(out, key("failed-sqs/2024-03-02/stuck-done-1"), "G.STUCK") != "written" {
		t.Errorf("stuck: %s: exit %d:\n%s", *s.Command, code, out)
	}

	// Newer in the database than every message: every one dropped as stale.
	n := byID["G.NEWER"]
	if len(n.Rows) != 1 || n.Rows[0].Status != "completed" || len(n.Messages) != 2 || n.Conclusion.Kind != trace.ConcludeNewer ||
		n.Conclusion.Text != "nothing in the archive would change the row: the database is newer" {
		t.Errorf("newer: %+v", n.Trace)
	} else {
		for _, msg := range n.Messages {
			if msg.Verdict.Result != "dropped" || !strings.HasPrefix(msg.Verdict.Why, "stale: ") {
				t.Errorf("newer: %s: %+v", msg.Key, msg.Verdict)
			}
		}
		out, code := bashPrinted(t, *n.Command, dbEnv)
		for _, k := range []string{"sqs/2024-03-01/newer-run-1", "sqs/2024-03-02/newer-done-2"} {
			if code != 0 || resultOf(out, key(k), "G.NEWER") != "dropped" {
				t.Errorf("newer: %s: exit %d, %s not dropped:\n%s", *n.Command, code, k, out)
			}
		}
	}

	// Held by another collection: refused.
	o := byID["G.OTHER"]
	if len(o.Rows) != 1 || deref(o.Rows[0].Collection) != "MOD09A1___061" || o.Conclusion.Kind != trace.ConcludeRefused ||
		o.Conclusion.Text != "refused: another collection holds it (MOD09A1___061)" || o.Messages[0].Verdict.Result != "failed" {
		t.Errorf("other collection: %+v", o.Trace)
	} else if out, code := bashPrinted(t, *o.Command, dbEnv); resultOf(out, key("sqs/2024-03-03/other-done-2"), "G.OTHER") != "failed" {
		t.Errorf("other collection: %s: exit %d:\n%s", *o.Command, code, out)
	}

	// Never failed: in the database, not in the archive; the search
	// printed finds nothing.
	fine := byID["G.FINE"]
	if len(fine.Rows) != 1 || len(fine.Messages) != 0 || fine.Conclusion.Kind != trace.ConcludeNotInArchive ||
		fine.Conclusion.Text != "not in the archive: no write of it failed; the database holds it (completed)" {
		t.Errorf("never failed: %+v", fine.Trace)
	} else if out, code := bashPrinted(t, *fine.Command); code != 0 || strings.TrimSpace(out) != "" ||
		!strings.HasPrefix(*fine.Command, "dla search ") {
		t.Errorf("never failed: %s: exit %d:\n%s", *fine.Command, code, out)
	}

	if after := traceRowCount(t, db); after != before {
		t.Errorf("the printed dry runs changed the rows: %d before, %d after", before, after)
	}
	// The row of the stuck granule, as it is read.
	if s.Rows[0].Table != "granules" || s.Rows[0].Files == nil || s.Rows[0].Execution == nil ||
		!strings.HasSuffix(*s.Rows[0].Execution, ":stuck-run") || s.Rows[0].CreatedAt == nil {
		t.Errorf("the stuck granule's row: %+v", s.Rows[0])
	}
	// The text form names every record and prints each command alone.
	text := run(t, false, env, "", "trace", "--archive", archive, "--offline", "--granule", "G.STUCK", "--granule", "G.FINE")
	for _, want := range []string{"granule G.STUCK", "database: granules running", "→ written", *s.Command, *fine.Command} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("the text form lacks %q:\n%s", want, text.stdout)
		}
	}
	if !slices.Contains(strings.Split(text.stdout, "\n"), "      "+*s.Command) {
		t.Errorf("the command is not on a line of its own:\n%s", text.stdout)
	}
}

// trace needs something to trace, and refuses what does not apply.
func TestTraceUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "--archive", sampleArchive}, "trace what?"},
		{[]string{"trace", "--archive", sampleArchive, "--granule", "G", "--failed"}, "--failed does not apply"},
		{[]string{"trace", "--archive", sampleArchive, "--granule", "G", "--limit", "3"}, "--limit does not apply"},
		{[]string{"trace", "--archive", "s3://b/s", "--pdr", "P", "--engine", "athena"}, "--engine athena traces granules or executions"},
	} {
		if r := run(t, false, nil, "", c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, r.code, r.stderr)
		}
	}
}

// Issue 38 item 9: without an AWS region dla trace said only "no AWS
// region: pass --region …", while recover's same error names --offline,
// which trace has too. Its error now says so.
func TestTraceWithoutARegionSuggestsOffline(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	r := run(t, false, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "trace", "--archive", sampleArchive, "--granule", "G", "--database-url", db)
	if r.code == 0 || !strings.Contains(r.stderr, "no AWS region") || !strings.Contains(r.stderr, "--offline runs without them") {
		t.Errorf("exit %d, want an error naming --offline:\n%s", r.code, r.stderr)
	}
}

// Issue 38 item 9: the summary said "1 record traced: 1 message naming
// them"; its pronoun now agrees with the count of records.
func TestTraceSummaryAgreesWithItsCounts(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	args := []string{"trace", "--archive", sampleArchive, "--offline", "--database-url", db, "--ignore-unreadable", "--granule", "MOD09GQ.A2023111.h06v07.006.2024248749933"}
	r := run(t, false, nil, "", args...)
	if r.code != 0 || !strings.Contains(r.stderr, "1 record traced: 1 message naming it,") {
		t.Errorf("one granule: exit %d:\n%s", r.code, r.stderr)
	}
	r = run(t, false, nil, "", append(args, "--granule", "NOT.IN.THE.ARCHIVE")...)
	if r.code != 0 || !strings.Contains(r.stderr, "2 records traced: 1 message naming them,") {
		t.Errorf("two granules: exit %d:\n%s", r.code, r.stderr)
	}
}

// An execution traced by its name matches that name exactly: '_' and '%'
// in it are characters, not LIKE wildcards ('--execution %' read every
// execution of the database as the record's rows, and 'run_1' the row of
// 'runX1' too), and '\' is not LIKE's escape.
func TestTraceExecutionNameMatchesExactly(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	env := map[string]string{"DATABASE_URL": db, "DEADLETTER_NO_PROMPT": "1"}
	at := time.Date(2024, 3, 2, 8, 0, 0, 0, time.UTC)
	setup := t.TempDir()
	for i, name := range []string{"run_1", "runX1", `run\%2`, "run%2"} {
		writeObject(t, setup, "sqs/2024-03-02/s"+string(rune('a'+i)), traceMessage(t, name, "completed", at, "MOD09GQ", "006", "G.EXEC."+string(rune('a'+i))))
	}
	if r := run(t, false, env, "", "recover", "--archive", filepath.Join(setup, "demo"), "--offline", "--yes"); r.code != 0 {
		t.Fatalf("setting up the rows: exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}
	empty := t.TempDir()
	writeObject(t, empty, "sqs/2024-03-03/other", traceMessage(t, "other", "completed", at, "MOD09GQ", "006", "G.OTHER"))
	for _, c := range []struct {
		id   string
		want []string // the names of the rows read
	}{
		{"run_1", []string{"run_1"}},
		{"runX1", []string{"runX1"}},
		{"%", nil},
		{"_", nil},
		{"run%2", []string{"run%2"}},
		{`run\%2`, []string{`run\%2`}},
		{"un_1", nil},
	} {
		r := run(t, false, env, "", "trace", "--archive", filepath.Join(empty, "demo"), "--offline", "-o", "json", "--execution", c.id)
		if r.code != 0 {
			t.Fatalf("--execution %q: exit %d: %s", c.id, r.code, r.stderr)
		}
		var rep TraceReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		var got []string
		for _, row := range rep.Records[0].Rows {
			got = append(got, row.ID[strings.LastIndex(row.ID, ":")+1:])
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("--execution %q read the rows of %q, want %q", c.id, got, c.want)
		}
	}
}

// The search a trace prints when no message names the record is the same
// command every run: its --from and --to came from ranging over a map, so
// one run in four printed '--to … --from …'.
func TestTraceSearchCommandIsTheSameEveryRun(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	env := map[string]string{"DATABASE_URL": db}
	search := "dla search --archive " + sampleArchive + " --granule G.NONE --from 2024-03-01 --to 2024-03-05 --include-legacy"
	want := search + "; " + search + " --failed"
	for i := 0; i < 24; i++ {
		r := run(t, false, env, "", "trace", "--archive", sampleArchive, "--offline", "-o", "json", "--ignore-unreadable",
			"--granule", "G.NONE", "--from", "2024-03-01", "--to", "2024-03-05", "--include-legacy")
		var rep TraceReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
			t.Fatalf("exit %d: %v\n%s", r.code, err, r.stderr)
		}
		if got := deref(rep.Records[0].Command); got != want {
			t.Fatalf("run %d printed\n  %s\nwant\n  %s", i, got, want)
		}
	}
}

// A database trace cannot use ends the trace before the archive is read:
// the schema refused (exit 2) or the server unreachable. The archive was
// read first, all of it (every object of an S3 archive, for a PDR), and
// the refusal, which says nothing was read, came after its unreadable
// objects were reported.
func TestTraceRefusesTheDatabaseBeforeReadingTheArchive(t *testing.T) {
	root := t.TempDir()
	writeObject(t, root, "sqs/2024-03-02/named", traceMessage(t, "named", "completed", time.Date(2024, 3, 2, 8, 0, 0, 0, time.UTC), "MOD09GQ", "006", "G.REFUSED"))
	writeObject(t, root, "sqs/2024-03-02/broken", []byte(`{"G.REFUSED": `))
	archive := filepath.Join(root, "demo")
	for _, c := range []struct {
		name, db string
		code     int
		want     string
	}{
		{"no Cumulus tables", testsupport.NewDatabase(t), 2, "the database schema is not one dla can write"},
	} {
		r := run(t, false, map[string]string{"DATABASE_URL": c.db}, "", "trace", "--archive", archive, "--offline", "--granule", "G.REFUSED")
		if r.code != c.code || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("%s: exit %d (want %d):\n%s%s", c.name, r.code, c.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stderr, "unreadable") {
			t.Errorf("%s: the archive was read before the database was refused:\n%s", c.name, r.stderr)
		}
	}
}

// Issue 38 item 1: a database that cannot be reached ended the trace
// before the archive was read. The archive's half is printed now: the
// record's messages, none judged, "database: not checked" and why, and a
// conclusion that says so, with exit 3 (partial); -o json carries
// database_error and each verdict "not judged".
func TestTraceWithAnUnreachableDatabaseStillReadsTheArchive(t *testing.T) {
	root := t.TempDir()
	writeObject(t, root, "sqs/2024-03-02/named", traceMessage(t, "named", "completed", time.Date(2024, 3, 2, 8, 0, 0, 0, time.UTC), "MOD09GQ", "006", "G.AWAY"))
	archive := filepath.Join(root, "demo")
	env := map[string]string{"DATABASE_URL": "postgres://postgres:hunter2@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"}
	r := run(t, false, env, "", "trace", "--archive", archive, "--offline", "--granule", "G.AWAY")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"database: not checked: cannot connect to PostgreSQL", "sqs/2024-03-02/named",
		"→ not judged: the database could not be asked", "not judged: the database could not be asked, so its one message (2024-03-02 in sqs/) was not tried"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "hunter2") {
		t.Errorf("the password is printed:\n%s%s", r.stdout, r.stderr)
	}
	r = run(t, false, env, "", "trace", "--archive", archive, "--offline", "--granule", "G.AWAY", "-o", "json")
	var rep TraceReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if r.code != 3 || rep.DatabaseError == nil || len(rep.Records) != 1 || len(rep.Records[0].Messages) != 1 ||
		rep.Records[0].Messages[0].Verdict.Result != trace.NotJudged || rep.Records[0].Conclusion.Kind != trace.ConcludeNotJudged {
		t.Fatalf("exit %d, report %+v", r.code, rep)
	}
}

// A record no readable message names is "not in the archive" only as far
// as the archive could be read: with objects that could not be read (a
// truncated one holding the granule's id, here), the conclusion says so
// and -o json counts them, where it said flatly "no write of it failed"
// and the JSON carried no trace of them but the exit code.
func TestTraceNotInTheArchiveSaysWhenObjectsCouldNotBeRead(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	root := t.TempDir()
	whole := traceMessage(t, "cut", "completed", time.Date(2024, 3, 2, 8, 0, 0, 0, time.UTC), "MOD09GQ", "006", "G.CUT")
	writeObject(t, root, "sqs/2024-03-02/cut", whole[:len(whole)-40])
	r := run(t, false, map[string]string{"DATABASE_URL": db}, "", "trace", "--archive", filepath.Join(root, "demo"), "--offline", "-o", "json", "--granule", "G.CUT")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3: %s", r.code, r.stderr)
	}
	var rep TraceReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	c := rep.Records[0].Conclusion
	if rep.Unreadable != 1 || c.Kind != trace.ConcludeNotInArchive ||
		c.Text != "not in the archive: no write of it failed (but 1 object could not be read, and may name it); it is not in the database either" {
		t.Errorf("unreadable %d, conclusion %+v", rep.Unreadable, c)
	}
	if !strings.Contains(r.stdout, `"unreadable": 1`) {
		t.Errorf("-o json lacks the unreadable count:\n%s", r.stdout)
	}
}
