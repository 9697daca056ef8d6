package triage

import (
	"context"
	"slices"
	"testing"

	"github.com/deadletter/deadletter/internal/dla"
)

// A record Cumulus's error names ("Record in T with identifiers {...} does
// not exist", as Cumulus v21 and dla recover write it) is needed by the
// whole key the identifiers give: a collection by name and version (as
// name___version, which the lookup takes), a granule by granule_id and
// collection_cumulus_id; providers, PDRs, executions and async operations
// by their one key. Keyed by its name alone, a collection was never found
// and its group never ready.
func TestNamedRecordNeedsAreKeyedByTheWholeIdentifiers(t *testing.T) {
	for _, c := range []struct {
		ids   string // Record in TABLE with identifiers IDS
		table string
		want  Need
	}{
		{`{"name":"MOD09GQ","version":"006"}`, "collections", Need{Kind: KindCollection, Name: "MOD09GQ___006"}},
		{`{"version":"006","name":"MOD09GQ"}`, "collections", Need{Kind: KindCollection, Name: "MOD09GQ___006"}},
		{`{"name":"LPCLOUD_S3"}`, "providers", Need{Kind: KindProvider, Name: "LPCLOUD_S3"}},
		{`{"name":"PDN.ID1709.PDR"}`, "pdrs", Need{Kind: KindPDR, Name: "PDN.ID1709.PDR"}},
		{`{"arn":"arn:aws:states:us-east-1:123456789012:execution:IngestGranule:parent-1"}`, "executions",
			Need{Kind: KindExecution, Name: "arn:aws:states:us-east-1:123456789012:execution:IngestGranule:parent-1"}},
		{`{"id":"0eb8e809-8790-5409-1239-bcd9e8d28b8e"}`, "async_operations", Need{Kind: KindAsyncOperation, Name: "0eb8e809-8790-5409-1239-bcd9e8d28b8e"}},
		{`{"granule_id":"MOD09GQ.A2024018.h31v05.006.2024031032640","collection_cumulus_id":1000000}`, "granules",
			Need{Kind: KindGranule, Name: "MOD09GQ.A2024018.h31v05.006.2024031032640", CollectionCumulusID: "1000000"}},
		{`{"granule_id":"G1"}`, "granules", Need{Kind: KindGranule, Name: "G1"}},
	} {
		tr := New()
		text := "RecordDoesNotExist: Record in " + c.table + " with identifiers " + c.ids + " does not exist."
		tr.Add(&dla.Decoded{Record: dla.Record{Key: "k", Partition: "2024-03-01", Error: text, HasError: true}})
		g := tr.Groups()[0]
		if got := g.SortedNeeds(); !slices.Equal(got, []Need{c.want}) {
			t.Errorf("%s %s: needs %+v, want %+v", c.table, c.ids, got, c.want)
		}
	}
}

// A group whose collection is named by name and version is ready once
// MOD09GQ___006 exists, and until then its fix names the collection by
// the id an operator creates it with.
func TestReadinessLooksACollectionUpByNameAndVersion(t *testing.T) {
	tr := New()
	for _, k := range []string{"a", "b", "c", "d"} {
		tr.Add(&dla.Decoded{Record: dla.Record{Key: k, Partition: "2024-03-01", HasError: true,
			Error: `RecordDoesNotExist: Record in collections with identifiers {"name":"MOD09GQ","version":"006"} does not exist.`}})
	}
	g := tr.Groups()[0]
	if err := tr.CheckReadiness(context.Background(), func(context.Context, Need) (bool, error) { return false, nil }); err != nil {
		t.Fatal(err)
	}
	if g.FixSteps() != "create collection MOD09GQ___006" {
		t.Errorf("missing: fix %q", g.FixSteps())
	}
	if err := tr.CheckReadiness(context.Background(), func(_ context.Context, n Need) (bool, error) {
		return n == Need{Kind: KindCollection, Name: "MOD09GQ___006"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if g.Ready != 4 || g.FixSteps() != "" || g.Verdict() != "ready: the collection MOD09GQ___006 now exists" {
		t.Errorf("exists: ready %d of 4, fix %q, verdict %q", g.Ready, g.FixSteps(), g.Verdict())
	}
}

// ShortVerdict, for one line of a terminal, names at most the few records
// asked for ("and N more") and leaves the readiness note to the summary;
// Verdict (JSON, pipes, the report) is unchanged.
func TestShortVerdictFoldsNames(t *testing.T) {
	tr := New()
	for _, p := range []string{"P1", "P2", "P3", "P4", "P5", "P6", "P7"} {
		tr.Add(&dla.Decoded{Record: dla.Record{Key: p, Partition: "2024-03-01", HasError: true,
			Error: `RecordDoesNotExist: Record in providers with identifiers {"name":"` + p + `"} does not exist.`}})
	}
	g := tr.Groups()[0]
	if got, want := g.Verdict(), "fix first: providers P1, P2, P3, P4, P5 and 2 more (readiness not checked: no database given)"; got != want {
		t.Errorf("Verdict = %q, want %q", got, want)
	}
	for n, want := range map[int]string{
		3: "fix first: providers P1, P2, P3 and 4 more",
		1: "fix first: providers P1 and 6 more",
		0: "fix first: providers P1 and 6 more",
		9: "fix first: providers P1, P2, P3, P4, P5, P6, P7",
	} {
		if got := g.ShortVerdict(n); got != want {
			t.Errorf("ShortVerdict(%d) = %q, want %q", n, got, want)
		}
	}
}
