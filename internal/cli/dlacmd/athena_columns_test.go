package dlacmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Athena's WHERE reads the top-level columns of each object
// (docs/athena.md: "Columns, not bodies"); the existing parity test's fake
// answers with local search's own keys, so it never checks that Athena
// could find them. In the sample archive, 2 of the 14 objects local search
// matches for --status FAILED in 2024-03-01..05 are sqs-record objects
// (what Cumulus v18.3-v20 wrote into date folders: the SQS message as is,
// no hoisted fields): their status column is NULL, `upper(status) =
// 'FAILED'` is false, and `dla search --engine athena` silently leaves
// them out. migrate-legacy does not rewrite them (they are in date
// folders), and docs/athena.md only admits records "the writer could not
// unwrap". Either the engine must say it cannot see that generation (or
// fall back), or the doc must; as it stands the result is silently short.
// DEFECT (athena engine / docs/athena.md: sqs-record objects in date
// folders are invisible to every column filter). Fixed in athenasql: the
// query returns a superset that dla narrows.
func TestAthenaSeesWhatLocalSearchMatches(t *testing.T) {
	r := run(t, false, nil, "", "search", "--archive", sampleArchive, "--from", "2024-03-01", "--to", "2024-03-05", "--status", "FAILED", "-o", "keys", "--ignore-unreadable")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	keys := strings.Fields(r.stdout)
	if len(keys) == 0 {
		t.Fatal("no FAILED objects in the sample")
	}
	var invisible []string
	for _, k := range keys {
		raw, err := os.ReadFile(filepath.Join(sampleArchive, strings.TrimPrefix(k, "demo/")))
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(raw, &top); err != nil {
			t.Fatal(err)
		}
		// A record whose hoisted status is null is the documented case
		// ("the writer could not unwrap its body"); an object with no
		// hoisted fields at all is a whole generation the doc does not name.
		if _, hoisted := top["status"]; !hoisted {
			invisible = append(invisible, k)
		}
	}
	// Fixed: each filter also selects objects without its column (by their
	// body's text, or, for --status, every such object), and dla decodes and
	// filters what Athena returns. The query must say so for status.
	if len(invisible) == 0 {
		t.Fatal("the sample has no object without hoisted fields; the test needs some")
	}
	q := run(t, false, nil, "", "search", "--archive", "s3://b/demo", "--from", "2024-03-01", "--to", "2024-03-05", "--status", "FAILED", "--engine", "athena", "--print-sql")
	if q.code != 0 || !strings.Contains(q.stdout, "(upper(status) = 'FAILED' OR status IS NULL)") {
		t.Fatalf("%d objects local search matches have no status column (%s), and the query does not select such objects:\n%s",
			len(invisible), strings.Join(invisible, ", "), q.stdout)
	}
}
