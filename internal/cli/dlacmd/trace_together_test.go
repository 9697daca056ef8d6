package dlacmd

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/trace"
)

// traceMessageWithFiles is traceMessage with the template granule's
// first n files, named after the granule.
func traceMessageWithFiles(t *testing.T, exec, status string, start time.Time, collection, version, granule string, n int) []byte {
	t.Helper()
	raw, err := os.ReadFile(traceTemplate)
	if err != nil {
		t.Fatal(err)
	}
	var tmpl map[string]any
	if err := json.Unmarshal(raw, &tmpl); err != nil {
		t.Fatal(err)
	}
	files := tmpl["payload"].(map[string]any)["granules"].([]any)[0].(map[string]any)["files"].([]any)[:n]
	for i, f := range files {
		f := f.(map[string]any)
		name := fmt.Sprintf("%s.%d.hdf", granule, i)
		f["fileName"], f["key"] = name, collection+"___"+version+"/"+name
	}
	var m map[string]any
	if err := json.Unmarshal(traceMessage(t, exec, status, start, collection, version, granule), &m); err != nil {
		t.Fatal(err)
	}
	m["payload"].(map[string]any)["granules"].([]any)[0].(map[string]any)["files"] = files
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// traceJSON runs dla trace -o json and decodes its report.
func traceJSON(t *testing.T, env map[string]string, args ...string) (TraceReport, runResult) {
	t.Helper()
	r := run(t, false, env, "", append([]string{"trace", "-o", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("trace: exit %d: %s", r.code, r.stderr)
	}
	var rep TraceReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	return rep, r
}

// twoCollectionArchive is issue 37's case: granule G.AB named by an older
// completed message of MOD09GQ___006 with 3 files (sqs/2024-03-01) and a
// newer failed one of MOD09A1___061 (sqs/2024-03-03), neither in the
// database.
func twoCollectionArchive(t *testing.T) (root string) {
	t.Helper()
	root = t.TempDir()
	writeObject(t, root, "sqs/2024-03-01/ab-done", traceMessageWithFiles(t, "ab-done", "completed",
		time.Date(2024, 3, 1, 8, 0, 0, 0, time.UTC), "MOD09GQ", "006", "G.AB", 3))
	writeObject(t, root, "sqs/2024-03-03/ab-failed", traceMessage(t, "ab-failed", "failed",
		time.Date(2024, 3, 3, 8, 0, 0, 0, time.UTC), "MOD09A1", "061", "G.AB"))
	return root
}

// A granule named by an older message of one collection and a newer one
// of another: trace runs recover's dry run over both, in recover's order,
// in one transaction, so the newer meets the granule the older wrote. Its
// conclusion is the state a real recover of the whole archive leaves:
// completed in MOD09GQ___006 with its 3 files, decided by the older
// message; the newer is refused. Judged one at a time, each was "written",
// and trace advised the newer alone, which leaves the granule failed in
// MOD09A1___061. Run on v21 (PostgreSQL 15) and v22
// (DEADLETTER_TEST_CUMULUS=v22 on 17).
func TestTraceEndStateIsWhatRecoverOfTheArchiveLeaves(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	env := map[string]string{"DATABASE_URL": db, "DEADLETTER_NO_PROMPT": "1"}
	root := twoCollectionArchive(t)
	archive := filepath.Join(root, "demo")
	before := traceRowCount(t, db)

	rep, _ := traceJSON(t, env, "--archive", archive, "--offline", "--granule", "G.AB")
	if after := traceRowCount(t, db); after != before {
		t.Fatalf("trace changed the rows: %d before, %d after", before, after)
	}
	tr := rep.Records[0]
	t.Logf("%s\n  %s", tr.Conclusion.Text, deref(tr.Command))
	key := func(rel string) string { return "demo/dead-letter-archive/" + rel }
	if len(tr.Messages) != 2 || tr.Messages[0].Key != key("sqs/2024-03-01/ab-done") || tr.Messages[1].Key != key("sqs/2024-03-03/ab-failed") {
		t.Fatalf("the messages, in recover's order: %+v", tr.Messages)
	}
	if v := tr.Messages[0].Verdict; v.Result != recovery.Written || v.Status != "completed" {
		t.Errorf("the older message: %+v", v)
	}
	if v := tr.Messages[1].Verdict; v.Result != recovery.Failed || !strings.Contains(v.Why, "already exists for granuleId") {
		t.Errorf("the newer message, after the older: %+v", v)
	}
	c := tr.Conclusion
	if c.Kind != trace.ConcludeWrite || c.Message != 0 || len(c.Keys) != 2 || c.Keys[0] != tr.Messages[0].Key ||
		c.Text != "in recover's order, the message of 2024-03-01 in sqs/ decides it: granule completed in MOD09GQ___006 (after it: 1 failed)" {
		t.Errorf("conclusion: %+v", c)
	}

	// The printed dry run, run as printed, judges each message alone, as
	// the note says: the newer one "written".
	if a := tr.Messages[1].Alone; a == nil || a.Result != recovery.Written || tr.Messages[0].Alone != nil {
		t.Errorf("what recover --dry-run reports: %+v, %+v", tr.Messages[0].Alone, a)
	}
	if want := "recover's --dry-run judges each message against the database as it stands, and reports sqs/2024-03-03/ab-failed written " +
		"(after the messages before it: failed); without --dry-run recover writes them one after another, and does what this trace says"; deref(tr.CommandNote) != want {
		t.Errorf("note %q", deref(tr.CommandNote))
	}
	out, code := bashPrinted(t, *tr.Command, "DATABASE_URL="+db)
	if code != 0 || resultOf(out, key("sqs/2024-03-01/ab-done"), "G.AB") != "written" || resultOf(out, key("sqs/2024-03-03/ab-failed"), "G.AB") != "written" {
		t.Errorf("%s: exit %d:\n%s", *tr.Command, code, out)
	}

	// What a recover of the whole archive (one object at a time, in its
	// order) really leaves.
	if r := run(t, false, env, "", "recover", "--archive", archive, "--offline", "--yes", "--concurrency", "1"); r.code != 3 ||
		resultOf(r.stdout, key("sqs/2024-03-03/ab-failed"), "G.AB") != "failed" {
		t.Fatalf("recover of the archive: exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}
	empty := t.TempDir()
	writeObject(t, empty, "sqs/2024-03-09/unrelated", traceMessage(t, "unrelated", "completed", time.Date(2024, 3, 9, 8, 0, 0, 0, time.UTC), "MOD09GQ", "006", "G.UNRELATED"))
	after, _ := traceJSON(t, env, "--archive", filepath.Join(empty, "demo"), "--offline", "--granule", "G.AB")
	rows := after.Records[0].Rows
	if len(rows) != 1 || rows[0].Files == nil {
		t.Fatalf("after recover of the archive: rows %+v", rows)
	}
	got := fmt.Sprintf("granule %s in %s, %d files", rows[0].Status, deref(rows[0].Collection), *rows[0].Files)
	if got != "granule completed in MOD09GQ___006, 3 files" {
		t.Fatalf("recover of the archive left %s", got)
	}
	decided := tr.Messages[c.Message]
	if want := decided.Writes + ", 3 files"; got != want {
		t.Errorf("trace concluded %s; recover of the archive left %s", want, got)
	}
}

// Messages of two collections naming one granule id are warned of: which
// collection ends up holding it depends on the order they are recovered
// in. One collection, no warning.
func TestTraceWarnsOfMessagesOfAnotherCollection(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	env := map[string]string{"DATABASE_URL": db}
	root := twoCollectionArchive(t)
	writeObject(t, root, "sqs/2024-03-02/one-done", traceMessage(t, "one-done", "completed",
		time.Date(2024, 3, 2, 8, 0, 0, 0, time.UTC), "MOD09GQ", "006", "G.ONE"))
	writeObject(t, root, "failed-sqs/2024-03-04/one-again", traceMessage(t, "one-again", "completed",
		time.Date(2024, 3, 4, 8, 0, 0, 0, time.UTC), "MOD09GQ", "006", "G.ONE"))
	archive := filepath.Join(root, "demo")
	rep, _ := traceJSON(t, env, "--archive", archive, "--offline", "--granule", "G.AB", "--granule", "G.ONE")
	ab, one := rep.Records[0], rep.Records[1]
	want := "messages of 2 collections name granule G.AB: MOD09GQ___006 (1 message), MOD09A1___061 (1 message); " +
		"Cumulus keeps a granule id in one collection, the first that writes it, and refuses the other's messages, " +
		"so the order they are recovered in decides which"
	if len(ab.Warnings) != 1 || ab.Warnings[0] != want {
		t.Errorf("G.AB warnings: %q", ab.Warnings)
	}
	if len(one.Warnings) != 0 {
		t.Errorf("G.ONE, of one collection, warned: %q", one.Warnings)
	}
	text := run(t, false, env, "", "trace", "--archive", archive, "--offline", "--granule", "G.AB")
	if !strings.Contains(text.stdout, "  warning: "+want+"\n") {
		t.Errorf("the text form lacks the warning:\n%s", text.stdout)
	}
}

// objectsRead is the number of objects each summary line of dla trace or
// dla search on stderr says was read, summed.
func objectsRead(t *testing.T, stderr string) int {
	t.Helper()
	n := 0
	for _, m := range regexp.MustCompile(`(\d+) objects? read`).FindAllStringSubmatch(stderr, -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

// The search trace prints for a record no message names reads every
// folder trace read: sqs/ and failed-sqs/ (dla search reads one a run;
// --failed is failed-sqs/). It printed the search of sqs/ alone, which
// never looks where recover moved the messages it could not write.
func TestTracePrintedSearchReadsFailedSqsToo(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	root := t.TempDir()
	at := time.Date(2024, 3, 2, 8, 0, 0, 0, time.UTC)
	writeObject(t, root, "sqs/2024-03-02/a", traceMessage(t, "a", "completed", at, "MOD09GQ", "006", "G.A"))
	writeObject(t, root, "failed-sqs/2024-03-02/b", traceMessage(t, "b", "completed", at, "MOD09GQ", "006", "G.B"))
	writeObject(t, root, "failed-sqs/2024-03-03/c", traceMessage(t, "c", "completed", at, "MOD09GQ", "006", "G.C"))
	rep, r := traceJSON(t, map[string]string{"DATABASE_URL": db}, "--archive", filepath.Join(root, "demo"), "--offline", "--granule", "G.NONE")
	read := objectsRead(t, r.stderr)
	cmd := deref(rep.Records[0].Command)
	if read != 3 || !strings.HasPrefix(cmd, "dla search ") {
		t.Fatalf("trace read %d objects, printed %q:\n%s", read, cmd, r.stderr)
	}
	c := exec.Command("bash", "-c", cmd)
	c.Env = append(os.Environ(), "PATH="+traceBin(t)+":"+os.Getenv("PATH"), "AWS_EC2_METADATA_DISABLED=true")
	var stdout, stderr strings.Builder
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil || stdout.String() != "" {
		t.Fatalf("%s: %v:\n%s%s", cmd, err, stdout.String(), stderr.String())
	}
	if got := objectsRead(t, stderr.String()); got != read {
		t.Errorf("trace read %d objects, its printed search %d:\n  %s\n%s", read, got, cmd, stderr.String())
	}
}

// Given --database-url, the printed recover carries it, without its
// password: run as printed, with the password in PGPASSWORD and no
// DATABASE_URL or PG* variable to fall back on, it reaches the database
// trace read. It left the database out, and exited 1 "cannot connect to
// PostgreSQL at /var/run/postgresql:5432". The note says where the
// password comes from; key=value pairs, which cannot be shown without
// their password, are left out with a note naming the flag.
func TestTracePrintedRecoverCarriesTheDatabaseURLWithoutItsPassword(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	root := t.TempDir()
	writeObject(t, root, "sqs/2024-03-02/done", traceMessage(t, "done", "completed", time.Date(2024, 3, 2, 8, 0, 0, 0, time.UTC), "MOD09GQ", "006", "G.URL"))
	archive := filepath.Join(root, "demo")
	const password = "s3cr3t-trace"
	withPassword := strings.Replace(db, "postgres://postgres@", "postgres://postgres:"+password+"@", 1)
	if withPassword == db {
		t.Fatalf("the test database URL %s has no user part to add a password to", db)
	}
	noFallback := []string{"DATABASE_URL=", "PGHOST=", "PGPORT=", "PGDATABASE=", "PGUSER=", "PGSERVICE=", "PGPASSWORD=" + password}
	env := map[string]string{"DATABASE_URL": ""}
	rep, _ := traceJSON(t, env, "--archive", archive, "--offline", "--granule", "G.URL", "--database-url", withPassword)
	rec := rep.Records[0]
	cmd := deref(rec.Command)
	if !strings.Contains(cmd, " --database-url ") || strings.Contains(cmd, password) {
		t.Fatalf("printed %q", cmd)
	}
	if deref(rec.CommandNote) != "the password of --database-url is left out: the command reads it from PGPASSWORD or ~/.pgpass" {
		t.Errorf("note %q", deref(rec.CommandNote))
	}
	out, code := bashPrinted(t, cmd, noFallback...)
	if code != 0 || resultOf(out, "demo/dead-letter-archive/sqs/2024-03-02/done", "G.URL") != "written" {
		t.Errorf("%s: exit %d:\n%s", cmd, code, out)
	}
	text := run(t, false, env, "", "trace", "--archive", archive, "--offline", "--granule", "G.URL", "--database-url", withPassword)
	if strings.Contains(text.stdout, password) || !strings.Contains(text.stdout, "\n    (the password of --database-url is left out") {
		t.Errorf("the text form:\n%s", text.stdout)
	}

	// key=value pairs: the flag is named, never the string.
	kv := "host=127.0.0.1 password=" + password
	if u, _, ok := urlWithoutPassword(kv); ok {
		t.Fatalf("%q read as a URL: %q", kv, u)
	}
	if u, had, ok := urlWithoutPassword("postgresql://u@h:1/d?sslmode=disable&password=" + password); !ok || !had || u != "postgresql://u@h:1/d?sslmode=disable" {
		t.Errorf("a password parameter: %q %v %v", u, had, ok)
	}
	if u, had, ok := urlWithoutPassword(db); !ok || had || u != db {
		t.Errorf("a URL without a password: %q %v %v", u, had, ok)
	}
}

// A message whose statement PostgreSQL refuses outside a savepoint (a
// collection name with a NUL byte, 22021 on its lookup) aborts the
// transaction the messages share: only that message is undone, and the
// next is judged as recover, one statement a transaction, judges it
// (written). Without a savepoint for each message, the trace stopped
// with 25P02 "current transaction is aborted".
func TestTraceGoesOnAfterAMessageThatAbortsTheTransaction(t *testing.T) {
	db := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	root := t.TempDir()
	at := time.Date(2024, 3, 2, 8, 0, 0, 0, time.UTC)
	bad := strings.ReplaceAll(string(traceMessage(t, "bad", "completed", at, "MODNUL", "006", "G.NUL")), `"MODNUL"`, `"MOD\u0000"`)
	writeObject(t, root, "sqs/2024-03-01/bad", []byte(bad))
	writeObject(t, root, "sqs/2024-03-02/good", traceMessage(t, "good", "completed", at, "MOD09GQ", "006", "G.NUL"))
	rep, _ := traceJSON(t, map[string]string{"DATABASE_URL": db}, "--archive", filepath.Join(root, "demo"), "--offline", "--granule", "G.NUL")
	tr := rep.Records[0]
	if len(tr.Messages) != 2 || tr.Messages[0].Verdict.Result != recovery.Failed || !strings.Contains(tr.Messages[0].Verdict.Why, "SQLSTATE 22021") ||
		tr.Messages[1].Verdict.Result != recovery.Written || tr.Conclusion.Message != 1 {
		t.Errorf("%+v", tr)
	}
}
