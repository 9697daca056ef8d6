package dlacmd

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/athenasql"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/shellword"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakeathena"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
	"github.com/deadletter/deadletter/internal/triage"
)

// triageOf runs triage -o json; its exit is 0, or 3 when some objects were
// unreadable (without --ignore-unreadable).
func triageOf(t *testing.T, env map[string]string, args ...string) TriageReport {
	t.Helper()
	r := run(t, false, env, "", append([]string{"triage", "-o", "json"}, args...)...)
	var rep TriageReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("triage -o json: exit %d: %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	want := 0
	if rep.Unreadable > 0 && !slices.Contains(args, "--ignore-unreadable") {
		want = 3
	}
	if r.code != want {
		t.Fatalf("triage: exit %d, want %d (%d unreadable): %s", r.code, want, rep.Unreadable, r.stderr)
	}
	return rep
}

// The sample archive's triage, as JSON and as the piped text, is pinned.
func TestTriageOfTheSampleArchive(t *testing.T) {
	r := run(t, false, nil, "", "triage", "--archive", sampleArchive, "-o", "json")
	if r.code != 3 { // the sample holds unreadable objects
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	abs, err := filepath.Abs(sampleArchive)
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "triage_sample_json.golden"), strings.ReplaceAll(r.stdout, abs, "SAMPLE")) // where the clone is
	r = run(t, false, nil, "", "triage", "--archive", sampleArchive)
	if r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden.Check(t, filepath.Join("testdata", "triage_sample_piped.golden"), r.stdout)
	if !strings.Contains(r.stderr, "readiness not checked (no database given)") {
		t.Errorf("the summary does not say readiness was not checked: %s", r.stderr)
	}
}

// The seed-3 archive (written by Cumulus v21's own code): every error text
// Cumulus documents has a class; only the objects without an error text
// and the operator's own free text are unknown.
func TestTriageOfSeed3(t *testing.T) {
	dir := filepath.Join(testsupport.Seed3Dir(t), "archive", "demo")
	rep := triageOf(t, nil, "--archive", dir)
	var b strings.Builder
	for _, g := range rep.Groups {
		class := "(unreadable)"
		if g.ErrorClass != nil {
			class = *g.ErrorClass
		}
		b.WriteString(strings.Join([]string{strconv.Itoa(g.Count), string(g.Class), g.Rule, class}, "\t") + "\n")
		if g.Class == triage.Unknown && class != "" && !strings.HasPrefix(class, "Error: re-driven by operator") {
			t.Errorf("%d objects of a Cumulus error are unknown: %s", g.Count, class)
		}
	}
	golden.Check(t, filepath.Join("testdata", "triage_seed3.golden"), b.String())
	if rep.Total != 150 || rep.Unreadable != 3 {
		t.Errorf("total %d, unreadable %d; want 150 and 3", rep.Total, rep.Unreadable)
	}
}

// Unreadable objects make triage exit 3, as its --ignore-unreadable help
// and search and stats say: each is named on stderr with its reason and
// is a group of its own on stdout; with --ignore-unreadable the exit is 0
// and the first 5 are named.
func TestTriageExitsPartialWhenObjectsAreUnreadable(t *testing.T) {
	unreadable := []string{
		"demo/dead-letter-archive/sqs/2024-03-03/e49d04ff-a020-40d3-873c-d49bfb240ffc-f06fc7ad-4c45-4045-a798-a5d66362798f",
		"demo/dead-letter-archive/sqs/2024-03-04/ed9fb8e8-9017-4a91-a226-07b6dfd13afe-a34caf5c-f375-4937-a87d-958a71cb1d2c",
	}
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"text", nil, 3},
		{"json", []string{"-o", "json"}, 3},
		{"ignored", []string{"--ignore-unreadable"}, 0},
		{"ignored json", []string{"--ignore-unreadable", "-o", "json"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, false, nil, "", append([]string{"triage", "--archive", sampleArchive, "--from", "2024-03-03", "--to", "2024-03-04"}, c.args...)...)
			if r.code != c.code {
				t.Errorf("exit %d, want %d: %s", r.code, c.code, r.stderr)
			}
			for _, key := range unreadable {
				if !strings.Contains(r.stderr, "dla: unreadable "+key+": ") {
					t.Errorf("stderr does not name %s:\n%s", key, r.stderr)
				}
			}
			if slices.Contains(c.args, "json") {
				var rep TriageReport
				if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Unreadable != 2 ||
					!slices.ContainsFunc(rep.Groups, func(g TriageGroup) bool { return g.ErrorClass == nil && g.Count == 2 }) {
					t.Errorf("the JSON does not count the unreadable objects as a group (%v):\n%s", err, r.stdout)
				}
			} else if !strings.Contains(r.stdout, "(unreadable)") {
				t.Errorf("stdout lacks the unreadable group:\n%s", r.stdout)
			}
		})
	}
}

// groundTruth groups the archive's readable objects by dla.ErrorClass of
// their error text, from search's own output: each class's keys.
func groundTruth(t *testing.T, archive string) map[string][]string {
	t.Helper()
	r := run(t, false, nil, "", "search", "--archive", archive, "-o", "ndjson", "--ignore-unreadable")
	if r.code != 0 {
		t.Fatalf("search: exit %d: %s", r.code, r.stderr)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var v struct {
			Key   string  `json:"key"`
			Error *string `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		text := ""
		if v.Error != nil {
			text = *v.Error
		}
		c := dla.ErrorClass(text)
		out[c] = append(out[c], v.Key)
	}
	return out
}

// runPrinted runs a command triage printed, word for word as bash would
// read it, with extra words, and returns the keys of its output lines.
func runPrinted(t *testing.T, env map[string]string, command string, extra ...string) []string {
	t.Helper()
	words, err := shellword.Split(command)
	if err != nil || len(words) < 2 || words[0] != "dla" {
		t.Fatalf("the printed command %q does not parse: %v", command, err)
	}
	r := run(t, false, env, "", append(words[1:], extra...)...)
	if r.code != 0 && r.code != 3 {
		t.Fatalf("%s: exit %d: %s", command, r.code, r.stderr)
	}
	var keys []string
	sep := "\n"
	if strings.Contains(r.stdout, "\x00") { // -o keys -0
		sep = "\x00"
	}
	for _, line := range strings.Split(strings.TrimSuffix(r.stdout, sep), sep) {
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "{") {
			keys = append(keys, line) // -o keys
			continue
		}
		var v struct {
			Key string `json:"key"`
		}
		if json.Unmarshal([]byte(line), &v) == nil && v.Key != "" {
			keys = append(keys, v.Key)
		}
	}
	sort.Strings(keys)
	return keys
}

// Every group's printed command, run as printed (recover with its
// --dry-run against a real Cumulus database), selects exactly the group's
// objects: no more, no fewer.
func TestTriageCommandsSelectExactlyTheirGroup(t *testing.T) {
	for _, archive := range []string{sampleArchive, filepath.Join(testsupport.Seed3Dir(t), "archive", "demo")} {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(archive))), func(t *testing.T) {
			env := map[string]string{"DATABASE_URL": testsupport.NewCumulusDatabase(t, nil)}
			truth := groundTruth(t, archive)
			rep := triageOf(t, nil, "--archive", archive)
			for _, g := range rep.Groups {
				if g.ErrorClass == nil {
					continue // unreadable: the command opens one
				}
				want := slices.Clone(truth[*g.ErrorClass])
				sort.Strings(want)
				if len(want) != g.Count {
					t.Errorf("%q: triage counts %d, the archive holds %d", *g.ErrorClass, g.Count, len(want))
				}
				if got := runPrinted(t, env, *g.Select); !slices.Equal(got, want) {
					t.Errorf("%s\nselects %d objects, the group has %d", *g.Select, len(got), len(want))
				}
				if strings.HasPrefix(g.Command, "dla recover ") {
					if got := runPrinted(t, env, g.Command, "--offline", "-o", "ndjson"); !slices.Equal(got, want) {
						t.Errorf("%s\nselects %d objects, the group has %d", g.Command, len(got), len(want))
					}
				}
			}
		})
	}
}

// A fix-first group whose providers are missing turns "ready" once they
// are inserted, against the real PostgreSQL; the lookup only reads.
func TestTriageFixFirstGroupTurnsReadyWhenTheProviderIsInserted(t *testing.T) {
	dbURL := testsupport.NewCumulusDatabase(t, nil)
	providers := func(rep TriageReport) TriageGroup {
		for _, g := range rep.Groups {
			if g.Rule == "record-does-not-exist" {
				return g
			}
		}
		t.Fatal("no record-does-not-exist group in the sample's triage")
		return TriageGroup{}
	}
	before := providers(triageOf(t, nil, "--archive", sampleArchive, "--database-url", dbURL))
	if before.Ready == nil || *before.Ready != 0 || len(before.Missing) != 3 || !strings.HasPrefix(before.Verdict, "fix first: providers LANCE_NRT, LPCLOUD_S3, LPDAAC_HTTPS") ||
		before.Fix == nil || !strings.HasPrefix(*before.Fix, "create providers LANCE_NRT, LPCLOUD_S3, LPDAAC_HTTPS") {
		t.Fatalf("before: %+v", before)
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, p := range []string{"LANCE_NRT", "LPCLOUD_S3"} {
		if _, err := conn.Exec(context.Background(), `INSERT INTO providers (name, protocol, host) VALUES ($1, 's3', 'bucket')`, p); err != nil {
			t.Fatal(err)
		}
	}
	partly := providers(triageOf(t, nil, "--archive", sampleArchive, "--database-url", dbURL))
	if len(partly.Missing) != 1 || partly.Missing[0].Name != "LPDAAC_HTTPS" || partly.Ready == nil || *partly.Ready == 0 || *partly.Ready == partly.Count {
		t.Fatalf("with two of three providers: %+v", partly)
	}
	if _, err := conn.Exec(context.Background(), `INSERT INTO providers (name, protocol, host) VALUES ('LPDAAC_HTTPS', 'https', 'e4ftl01.cr.usgs.gov')`); err != nil {
		t.Fatal(err)
	}
	after := providers(triageOf(t, map[string]string{"DATABASE_URL": dbURL}, "--archive", sampleArchive))
	if after.Ready == nil || *after.Ready != after.Count || len(after.Missing) != 0 || after.Verdict != "ready: every record named now exists (providers LANCE_NRT, LPCLOUD_S3, LPDAAC_HTTPS)" ||
		after.Fix != nil || !strings.HasPrefix(after.Command, "dla recover ") {
		t.Fatalf("after: %+v", after)
	}
}

// A group from recover's own error naming a collection by name and
// version (Record in collections with identifiers {"name":…,"version":…})
// is ready once that collection exists, against the real PostgreSQL, and
// until then its fix names it as name___version. A granule named with its
// collection_cumulus_id is looked up in that collection: the same
// granule id in another collection does not make it ready.
func TestTriageReadinessFindsARecordByItsWholeKey(t *testing.T) {
	dbURL := testsupport.NewCumulusDatabase(t, []byte(`{"collections":[{"name":"MOD09GQ","version":"006"},{"name":"OTHER","version":"1"}]}`))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var mod09, other int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT cumulus_id FROM collections WHERE name = 'MOD09GQ'), (SELECT cumulus_id FROM collections WHERE name = 'OTHER')`).Scan(&mod09, &other); err != nil {
		t.Fatal(err)
	}
	// The granule exists, but in the other collection.
	if _, err := conn.Exec(ctx, `INSERT INTO granules (granule_id, status, collection_cumulus_id, producer_granule_id) VALUES ('G1', 'completed', $1, 'G1')`, other); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	body := sampleBody(t)
	collText := `RecordDoesNotExist: Record in collections with identifiers {"name":"MOD09GQ","version":"006"} does not exist.`
	granText := `RecordDoesNotExist: Record in granules with identifiers {"granule_id":"G1","collection_cumulus_id":` + strconv.FormatInt(mod09, 10) + `} does not exist.`
	for i := 0; i < 4; i++ {
		writeObject(t, root, "sqs/2024-03-02/coll-"+strconv.Itoa(i), withError(t, body, collText))
	}
	for i := 0; i < 2; i++ {
		writeObject(t, root, "sqs/2024-03-02/gran-"+strconv.Itoa(i), withError(t, body, granText))
	}
	archive := filepath.Join(root, "demo")
	groups := func(rep TriageReport) (coll, gran TriageGroup) {
		for _, g := range rep.Groups {
			switch {
			case len(g.Needs) == 1 && g.Needs[0].Kind == triage.KindCollection:
				coll = g
			case len(g.Needs) == 1 && g.Needs[0].Kind == triage.KindGranule:
				gran = g
			}
		}
		if coll.Count != 4 || gran.Count != 2 {
			t.Fatalf("groups %+v", rep.Groups)
		}
		return coll, gran
	}
	coll, gran := groups(triageOf(t, nil, "--archive", archive, "--database-url", dbURL))
	if coll.Ready == nil || *coll.Ready != 4 || len(coll.Missing) != 0 || coll.Fix != nil ||
		coll.Verdict != "ready: the collection MOD09GQ___006 now exists" || !strings.HasPrefix(coll.Command, "dla recover ") {
		t.Errorf("the collection exists, yet: ready %v, missing %+v, verdict %q", deref(intString(coll.Ready)), coll.Missing, coll.Verdict)
	}
	if gran.Ready == nil || *gran.Ready != 0 || gran.Fix == nil || *gran.Fix != "create granule G1 (collection_cumulus_id "+strconv.FormatInt(mod09, 10)+")" {
		t.Errorf("G1 is only in another collection, yet: ready %v, fix %v, verdict %q", deref(intString(gran.Ready)), deref(gran.Fix), gran.Verdict)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO granules (granule_id, status, collection_cumulus_id, producer_granule_id) VALUES ('G1', 'failed', $1, 'G1')`, mod09); err != nil {
		t.Logf("this generation keeps a granule id in one collection (%v): not checked once G1 is in its own", err)
		return
	}
	if _, gran = groups(triageOf(t, nil, "--archive", archive, "--database-url", dbURL)); gran.Ready == nil || *gran.Ready != 2 || gran.Fix != nil {
		t.Errorf("G1 now exists in its collection, yet: ready %v, fix %v, verdict %q", deref(intString(gran.Ready)), deref(gran.Fix), gran.Verdict)
	}
}

func intString(p *int) *string {
	if p == nil {
		return nil
	}
	s := strconv.Itoa(*p)
	return &s
}

// dla report opens with the triage: its first section, with each group's
// verdict and command.
func TestReportOpensWithTheTriage(t *testing.T) {
	r := run(t, false, nil, "", "report", "--archive", sampleArchive, "--out", "-")
	if r.code != 0 && r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	page := html.UnescapeString(r.stdout)
	tri, perDay := strings.Index(page, "Triage: what to do with each group"), strings.Index(page, "Objects per day, by error class")
	if tri < 0 || perDay < 0 || tri > perDay {
		t.Fatalf("the triage is not the first section (at %d, the first chart at %d)", tri, perDay)
	}
	for _, want := range []string{"retry with dla recover", "create providers LANCE_NRT, LPCLOUD_S3, LPDAAC_HTTPS, then: dla recover --archive",
		"--error-class 'KnexTimeoutError: Knex: Timeout acquiring a connection.", "never as it is"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report's triage lacks %q", want)
		}
	}
}

// Hostile error texts (control bytes, bytes that are not UTF-8, a
// megabyte, ten thousand nested AggregateErrors) neither crash triage nor
// merge with another group, print escaped on one line each on a
// terminal, and each group's printed command selects exactly its objects.
func TestTriageOfHostileErrorTexts(t *testing.T) {
	root := t.TempDir()
	sample, err := os.ReadFile(filepath.Join(sampleArchive, "dead-letter-archive", "sqs", "2024-03-01", "1986f1d5-c53a-4a58-a7d5-33cabf12a21d-3693a1b9-048d-4504-b38e-46a881ab0d0a"))
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]int{
		"Error: \x1b[2J\x1b]0;pwned\x07 cleared 1\r\nat x (/a.js:1:2)":                       2, // differ in a number only: one group
		"Error: \xff\xfe not UTF-8 \x00 NUL":                                                 1,
		strings.Repeat("Error: huge ", 100000):                                               1,
		strings.Repeat("AggregateError: \n", 10000) + "KnexTimeoutError: x":                  1,
		"KnexTimeoutError: Knex: Timeout acquiring a connection. The pool is probably full.": 1,
		"none":                          1, // a text, not the absence of one
		"SchemaValidationError: a\x00b": 1, // a NUL cannot be in an argument
		"SchemaValidationError: a":      1,
		"Error: bidi \u202e evil":       1,
		"=ls":                           1, // zsh expands =ls unquoted
	}
	n := 0
	for text, copies := range texts {
		for i := 0; i < copies; i++ {
			n++
			writeObject(t, root, "sqs/2024-03-0"+strconv.Itoa(1+n%3)+"/obj-"+strconv.Itoa(n), withError(t, sample, strings.Replace(text, "1", strconv.Itoa(i+1), 1)))
		}
	}
	// No error text at all, under a key that cannot be listed one per line.
	writeObject(t, root, "sqs/2024-03-02/odd\nname '$(id)", withError(t, sample, nil))
	archive := filepath.Join(root, "demo")
	r := run(t, true, map[string]string{"NO_COLOR": "1"}, "", "triage", "--archive", archive)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	headers := 0
	for _, l := range lines {
		if triageHeaderRow.MatchString(l) {
			headers++
		}
	}
	if headers != len(texts)+1 {
		t.Errorf("%d header rows for %d groups:\n%s", headers, len(texts)+1, r.stdout)
	}
	for _, l := range lines {
		if strings.ContainsAny(l, "\x1b\x07\x00\r") || !utf8.ValidString(l) || len(l) > 4000 {
			t.Errorf("a line is not escaped, or too long (%d bytes): %.200q", len(l), l)
		}
	}
	truth := groundTruth(t, archive)
	rep := triageOf(t, nil, "--archive", archive)
	for _, g := range rep.Groups {
		if strings.Contains(*g.Select, "\\x00") {
			t.Errorf("a command carries a NUL, which no shell can pass: %q", *g.Select)
		}
		want := slices.Clone(truth[*g.ErrorClass])
		sort.Strings(want)
		got := runPrinted(t, nil, *g.Select)
		if !slices.Equal(got, want) || len(got) != g.Count {
			t.Errorf("%.120q: selects %d, the group has %d", *g.Select, len(got), g.Count)
		}
	}
}

// triageHeaderRow is a group's first line on a terminal without colour:
// its count, then its class as a badge.
var triageHeaderRow = regexp.MustCompile(`^ *[0-9]+  \[(transient|fix-first|permanent|unknown)\]`)

// On a terminal, triage opens with a summary (objects by class, what to
// do first), and shows each group as a header row fitted to the width,
// one verdict line and its next command whole on a line of its own; the
// classes are coloured badges, and the colour codes are sent, never
// shown as text (they were escaped as archived text: "\x1b[33mfix-first").
// Piped, the output stays tab-separated (TestTriageOfTheSampleArchive).
func TestTriageOnATerminal(t *testing.T) {
	args := []string{"triage", "--archive", sampleArchive, "--ignore-unreadable"}
	rep := triageOf(t, nil, args[1:]...)
	for _, width := range []int{80, 100, 200} {
		cols := strconv.Itoa(width)
		for _, env := range []map[string]string{{"COLUMNS": cols}, {"COLUMNS": cols, "NO_COLOR": "1"}, {"COLUMNS": cols, "TERM": "dumb"}} {
			r := run(t, true, env, "", args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			what := fmt.Sprintf("%d columns, env %v", width, env)
			if bad := testsupport.LiteralEscapes(r.stdout); len(bad) > 0 {
				t.Errorf("%s: escape sequences shown as text: %v", what, bad)
			}
			if color := env["NO_COLOR"] == "" && env["TERM"] == ""; testsupport.HasSGR(r.stdout) != color {
				t.Errorf("%s: colour %v, want %v", what, !color, color)
			}
			screen := testsupport.ScreenLines(r.stdout)
			if !strings.HasPrefix(screen[0].Plain, "71 objects in 8 groups: 15 transient, 35 fix-first, 18 permanent, 3 unknown") ||
				!strings.HasPrefix(screen[1].Plain, "first: retry 15 objects now") {
				t.Errorf("%s: the summary does not open the output:\n%s", what, r.stdout)
			}
			for _, g := range rep.Groups {
				if !testsupport.CommandOnItsOwnLine(r.stdout, g.Command) {
					t.Errorf("%s: the command is cut or not on a line of its own: %s", what, g.Command)
				}
			}
			if bad := testsupport.TooWide(r.stdout, width); len(bad) > 0 {
				t.Errorf("%s: lines wider than the terminal: %v", what, bad)
			}
		}
	}
	r := run(t, true, map[string]string{"COLUMNS": "100", "NO_COLOR": "1"}, "", args...)
	golden.Check(t, filepath.Join("testdata", "triage_sample_tty.golden"), r.stdout)
}

// With --engine athena the grouping is one query and the classification
// here: given the rows Athena would return for the sample archive (its
// records grouped by error, collection, provider and date), the triage is
// the local one, unreadable objects aside (they are not in the Glue table).
func TestTriageWithAthenaGroupsInSQLAndClassifiesHere(t *testing.T) {
	e := newAthenaEnv(t)
	archiveURL := "s3://" + e.bucket + "/demo"
	triageRows := e.triageRows(t, archiveURL)
	e.plan = func(sql string) fakeathena.Execution {
		if !strings.Contains(sql, "GROUP BY error, collectionid, providerid, eventdate") {
			t.Errorf("not the triage query:\n%s", sql)
		}
		return triageRows
	}
	args := []string{"triage", "--archive", archiveURL, "--from", "2024-03-01", "--to", "2024-03-05", "-o", "json"}
	local := run(t, false, nil, "", args...)
	athena := run(t, false, nil, "", append(args, "--engine", "athena")...)
	if local.code != 3 || athena.code != 0 { // unreadable objects are not in the Glue table
		t.Fatalf("local exit %d (%s), athena exit %d (%s)", local.code, local.stderr, athena.code, athena.stderr)
	}
	var lr, ar TriageReport
	if err := json.Unmarshal([]byte(local.stdout), &lr); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(athena.stdout), &ar); err != nil {
		t.Fatal(err)
	}
	var want []TriageGroup
	for _, g := range lr.Groups {
		if g.ErrorClass != nil {
			want = append(want, g)
		}
	}
	if len(ar.Groups) != len(want) {
		t.Fatalf("athena: %d groups, local: %d readable ones", len(ar.Groups), len(want))
	}
	for i, g := range ar.Groups {
		w := want[i]
		if *g.ErrorClass != *w.ErrorClass || g.Count != w.Count || g.Class != w.Class || g.Command != w.Command || g.ExampleKey != w.ExampleKey ||
			(g.Rule != "unmet-requirements" && g.Verdict != w.Verdict) {
			t.Errorf("group %d:\nathena %+v\nlocal  %+v", i, g, w)
		}
	}
	if !strings.Contains(athena.stderr, "Athena query q-") {
		t.Errorf("no Athena summary: %s", athena.stderr)
	}
}

// --probe runs recover's dry run on a sample of each group against the
// real database: what it reports is what recover would do now, and
// nothing is written.
func TestTriageProbeSaysHowManyWouldBeWrittenNow(t *testing.T) {
	dbURL := testsupport.NewCumulusDatabase(t, nil)
	rep := triageOf(t, nil, "--archive", sampleArchive, "--database-url", dbURL, "--probe", "2")
	probed := 0
	for _, g := range rep.Groups {
		if g.ErrorClass == nil {
			if g.Probe != nil {
				t.Errorf("unreadable objects were probed")
			}
			continue
		}
		if g.Probe == nil || g.Probe.Tried != min(2, g.Count) || !strings.Contains(g.Verdict, "; probe: ") {
			t.Errorf("%q: probe %+v, verdict %q", *g.ErrorClass, g.Probe, g.Verdict)
			continue
		}
		probed++
		t.Logf("%d %s: %s %+v", g.Count, g.Class, g.Verdict, *g.Probe)
		if g.Rule == "record-does-not-exist" && g.Probe.Written != 0 {
			t.Errorf("the providers are missing, yet the probe would write %d", g.Probe.Written)
		}
	}
	if probed == 0 {
		t.Fatal("nothing probed")
	}
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM executions) + (SELECT count(*) FROM granules) + (SELECT count(*) FROM pdrs)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("the probe left %d rows", n)
	}
	if r := run(t, false, nil, "", "triage", "--archive", sampleArchive, "--probe", "2"); r.code != 2 || !strings.Contains(r.stderr, "--probe needs a database") {
		t.Errorf("--probe without a database: exit %d, %s", r.code, r.stderr)
	}
}

// --limit would make a group's count and its command disagree (the
// command selects every object of the class): triage refuses it.
func TestTriageRefusesLimit(t *testing.T) {
	r := run(t, false, nil, "", "triage", "--archive", sampleArchive, "--limit", "5")
	if r.code != 2 || !strings.Contains(r.stderr, "--limit does not apply to dla triage") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
}

// The terminal's date cell shortens a range within one year
// (2024-03-01..03-05) and leaves any other as it is, whatever a date
// folder is named.
func TestTriageViewDates(t *testing.T) {
	for _, c := range [][3]string{
		{"2024-03-01", "2024-03-05", "2024-03-01..03-05"},
		{"2023-12-30", "2024-01-02", "2023-12-30..2024-01-02"},
		{"2024-03-01", "2024-03-01", "2024-03-01"},
		{"x", "y", "x..y"},
		{"", "2024-03-01", "..2024-03-01"},
	} {
		first, last := c[0], c[1]
		v := triageView(TriageReport{Groups: []TriageGroup{{Count: 1, Class: triage.Unknown, FirstDate: &first, LastDate: &last}}})
		if got := v.Groups[0].Cells[0]; got != c[2] {
			t.Errorf("%s..%s: %q, want %q", first, last, got, c[2])
		}
	}
}

// A database in $DATABASE_URL that cannot be reached (a real closed port)
// does not throw the archive pass away: every group is printed, their
// readiness said to be not checked and why, and the exit is 3 (partial),
// as JSON, piped and with --probe (issue 38 item 1). It printed only the
// connection error and exited 1.
func TestTriageWithAnUnreachableDatabasePrintsTheGroupsAndExitsPartial(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://cumulus@" + testsupport.ClosedPort(t) + "/cumulus?connect_timeout=5"}
	want := triageOf(t, nil, "--archive", sampleArchive, "--ignore-unreadable")
	for _, extra := range [][]string{nil, {"--probe", "2"}} {
		args := append([]string{"triage", "--archive", sampleArchive, "--ignore-unreadable", "-o", "json"}, extra...)
		r := run(t, false, env, "", args...)
		var rep TriageReport
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("%v: exit %d, no JSON (%v): %s", extra, r.code, err, r.stderr)
		}
		note := "readiness not checked: cannot connect to PostgreSQL at 127.0.0.1:"
		if extra != nil {
			note = "readiness not checked, nothing probed: cannot connect to PostgreSQL at 127.0.0.1:"
		}
		if r.code != 3 || !strings.Contains(r.stderr, "dla: "+note) {
			t.Errorf("%v: exit %d, stderr %q; want 3 and the reason", extra, r.code, r.stderr)
		}
		if rep.ReadinessChecked || rep.ReadinessError == nil || !strings.HasPrefix(*rep.ReadinessError, note) {
			t.Errorf("%v: readiness_checked %v, readiness_error %v", extra, rep.ReadinessChecked, rep.ReadinessError)
		}
		if len(rep.Groups) != len(want.Groups) || rep.Total != want.Total {
			t.Fatalf("%v: %d groups of %d objects, want the pass's %d of %d", extra, len(rep.Groups), rep.Total, len(want.Groups), want.Total)
		}
		for i, g := range rep.Groups {
			if g.Class == triage.FixFirst && (g.Ready != nil || g.Missing != nil || !strings.Contains(g.Verdict, "(readiness not checked: the database could not be asked)")) {
				t.Errorf("%v: %s: ready %v, missing %v, verdict %q", extra, g.Rule, g.Ready, g.Missing, g.Verdict)
			}
			if g.Probe != nil || g.Command != want.Groups[i].Command {
				t.Errorf("%v: %s: probe %+v, command %q, want none and %q", extra, g.Rule, g.Probe, g.Command, want.Groups[i].Command)
			}
		}
	}
	r := run(t, false, env, "", "triage", "--archive", sampleArchive, "--ignore-unreadable")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != 3 || len(lines) != len(want.Groups) || !strings.Contains(r.stderr, "; readiness not checked: cannot connect to PostgreSQL at 127.0.0.1:") {
		t.Errorf("piped: exit %d, %d lines, stderr %q", r.code, len(lines), r.stderr)
	}
}

// probeContradictsArchive holds n objects that recover writes now into a
// database with the reference seed, their error text a schema violation:
// the rule says never as it is, the probe that they would be written.
func probeContradictsArchive(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	body := withError(t, sampleBody(t), `AggregateError: SchemaValidationError: The record has validation errors: [{"keyword":"type","dataPath":".duration","message":"should be number"}]`)
	for i := range n {
		writeObject(t, dir, fmt.Sprintf("sqs/2024-03-02/contradicted-%d", i), body)
	}
	return filepath.Join(dir, "demo")
}

// Where --probe contradicts a group's rule (permanent, yet recover's dry
// run would write every object it tried, against a real PostgreSQL), the
// group has one verdict: "would be written now: retry", recover's dry run
// as its command (which, run through bash -c, would write them), and in
// the JSON the rule's class beside the verdict's (verdict_class,
// verdict_from). It said "never as it is; probe: 3 of 3 would be written
// now" with a dla search command (issue 38 item 2).
func TestTriageVerdictFollowsAProbeThatContradictsItsRule(t *testing.T) {
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	archive := probeContradictsArchive(t, 3)
	rep := triageOf(t, nil, "--archive", archive, "--database-url", dbURL, "--probe", "3")
	if len(rep.Groups) != 1 {
		t.Fatalf("%d groups, want 1", len(rep.Groups))
	}
	g := rep.Groups[0]
	t.Logf("%+v", g)
	if g.Class != triage.Permanent || g.Rule != "schema-validation" || g.VerdictClass != triage.Transient || g.VerdictFrom != triage.FromProbe ||
		g.Probe == nil || g.Probe.Written != 3 || !strings.HasPrefix(g.Verdict, "would be written now: retry (probe: 3 of 3; the rule schema-validation says never as it is)") ||
		!strings.HasPrefix(g.Command, "dla recover ") || !strings.HasSuffix(g.Command, " --dry-run") || g.Fix != nil {
		t.Fatalf("the group: %+v", g)
	}
	out, code := bashPrinted(t, g.Command+" --offline -o ndjson", "DATABASE_URL="+dbURL)
	if code != 0 || strings.Count(out, `"result":"written"`) != 3 {
		t.Errorf("%s: exit %d, want 3 written:\n%s", g.Command, code, out)
	}
	// Without the probe the rule speaks: the search that lists them.
	plain := triageOf(t, nil, "--archive", archive, "--database-url", dbURL).Groups[0]
	if plain.VerdictClass != triage.Permanent || plain.VerdictFrom != triage.FromRule || plain.Verdict != "never as it is" || !strings.HasPrefix(plain.Command, "dla search ") {
		t.Errorf("without --probe: %+v", plain)
	}
}

// The objects without an error text are named alike by every verb that
// names them, dla.NoErrorText: triage's group, stats --by error (piped
// and on a terminal) and the report's classes. They were "(no error
// text)", "(none)" and "(no error)" (issue 38 item 9).
func TestAnEmptyErrorHasOneNameInEveryVerb(t *testing.T) {
	for _, c := range []struct {
		tty  bool
		args []string
	}{
		{false, []string{"triage"}},
		{true, []string{"triage"}},
		{false, []string{"stats", "--by", "error"}},
		{true, []string{"stats", "--by", "error"}},
		{false, []string{"report", "--out", "-"}},
	} {
		r := run(t, c.tty, map[string]string{"NO_COLOR": "1"}, "", append(c.args, "--archive", sampleArchive, "--ignore-unreadable")...)
		out := html.UnescapeString(r.stdout)
		// "(none)" is still a collection's or a workflow's missing value.
		none := c.args[0] == "stats" && strings.Contains(out, "(none)")
		if r.code != 0 || !strings.Contains(out, dla.NoErrorText) || none || strings.Contains(out, "(no error)") {
			t.Errorf("%v (terminal %v): exit %d, %q named %v, (none) %v, (no error) %v", c.args, c.tty, r.code, dla.NoErrorText,
				strings.Contains(out, dla.NoErrorText), strings.Contains(out, "(none)"), strings.Contains(out, "(no error)"))
		}
	}
}

// triageRows are the rows Athena's triage query would return for the
// archive: its readable objects (as local search prints them) grouped by
// error, collection, provider and date.
func (e *athenaEnv) triageRows(t *testing.T, archiveURL string) fakeathena.Execution {
	t.Helper()
	r := run(t, false, nil, "", "search", "--archive", archiveURL, "-o", "ndjson", "--ignore-unreadable")
	if r.code != 0 {
		t.Fatalf("search: %d %s", r.code, r.stderr)
	}
	type rowKey struct{ err, coll, prov, date string }
	type agg struct {
		n       int
		example string
		hasErr  bool
	}
	rows := map[rowKey]*agg{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var v struct{ Key, Date string }
		var raw map[string]any
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatal(err)
		}
		str := func(k string) string { s, _ := raw[k].(string); return s }
		v.Key, v.Date = str("key"), str("date")
		k := rowKey{str("error"), str("collection_id"), str("provider_id"), v.Date}
		a := rows[k]
		if a == nil {
			a = &agg{example: v.Key, hasErr: raw["error"] != nil}
			rows[k] = a
		}
		a.n++
		if v.Key < a.example {
			a.example = v.Key
		}
	}
	ex := fakeathena.Execution{States: []string{"SUCCEEDED"}, Scanned: []int64{5 << 20}, Columns: athenasql.TriageColumns}
	for k, a := range rows {
		nullable := func(s string) *string {
			if s == "" {
				return nil
			}
			return aws.String(s)
		}
		ex.Rows = append(ex.Rows, []*string{nullable(k.err), nullable(k.coll), nullable(k.prov), aws.String(k.date),
			aws.String(strconv.Itoa(a.n)), aws.String("s3://" + e.bucket + "/" + a.example)})
	}
	return ex
}
