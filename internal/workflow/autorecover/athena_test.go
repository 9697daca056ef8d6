package autorecover

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/athenarun"
	"github.com/deadletter/deadletter/internal/athenasql"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakeathena"
)

// glueRow is an object as the stack's Glue table sees it.
type glueRow struct{ path, date, err, collection, provider string }

// glueTable is what Athena would answer for the objects of an archive: the
// triage query's rows grouped as its GROUP BY says, and the query of keys's
// rows in key order, less those whose error text the query's IN list (when
// it has one) does not name.
type glueTable struct {
	rows []glueRow
}

func (g *glueTable) plan(t *testing.T) func(sql string) fakeathena.Execution {
	return func(sql string) fakeathena.Execution {
		ex := fakeathena.Execution{States: []string{"RUNNING", "SUCCEEDED"}, Scanned: []int64{1 << 20, 4 << 20}}
		null := func(s string) *string {
			if s == "" {
				return nil
			}
			return aws.String(s)
		}
		switch {
		case strings.Contains(sql, "GROUP BY error, collectionid, providerid, eventdate"):
			ex.Columns = athenasql.TriageColumns
			type group struct{ err, collection, provider, date string }
			n, first := map[group]int{}, map[group]string{}
			var order []group
			for _, r := range g.rows {
				k := group{r.err, r.collection, r.provider, r.date}
				if n[k] == 0 {
					order = append(order, k)
					first[k] = r.path
				}
				n[k]++
				first[k] = min(first[k], r.path)
			}
			for _, k := range order {
				ex.Rows = append(ex.Rows, []*string{null(k.err), null(k.collection), null(k.provider), aws.String(k.date),
					aws.String(strconv.Itoa(n[k])), aws.String(first[k])})
			}
		case strings.HasPrefix(sql, `SELECT "$path" AS path, eventdate, error`):
			ex.Columns = athenasql.KeysColumns
			_, in, listed := strings.Cut(sql, "error IN (")
			for _, r := range g.rows {
				lit, _ := athenasql.Literal(r.err)
				if listed && !strings.Contains(in, lit) {
					continue
				}
				ex.Rows = append(ex.Rows, []*string{aws.String(r.path), aws.String(r.date), null(r.err)})
			}
		default:
			t.Errorf("a query the pass should not run:\n%s", sql)
			ex.States = []string{"FAILED"}
		}
		return ex
	}
}

// athenaOutage is outageArchive in an S3 bucket, with its Glue table
// behind a fake Athena endpoint.
func athenaOutage(t *testing.T, now time.Time, count int) (store archive.Store, loc archive.Location, byText map[string][]string, engine *Athena, fake *fakeathena.Server) {
	t.Helper()
	root := t.TempDir()
	local, byText := outageArchive(t, root, now, count)
	c := testsupport.S3Client(t)
	bucket := testsupport.NewBucket(t, c)
	testsupport.UploadTree(t, c, bucket, root, "")
	fake = fakeathena.New(t, glueTableOf(t, local, root, bucket).plan(t))
	fake.PageSize = 7 // several pages
	engine = engineAt(fake.URL)
	return archive.NewS3(c, bucket), archive.Location{Bucket: bucket, Stack: stack}, byText, engine, fake
}

// With Athena, a pass counts the lookback with one query and finds the
// keys of the group it recovers with another: it groups and decides as a
// pass that reads every object, recovers the same group, and reads from
// the archive only the probe's samples and the objects it recovers.
func TestAPassWithAthenaCountsInOneQueryAndReadsOnlyWhatItRecovers(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	s3store, loc, byText, engine, fake := athenaOutage(t, t0, 40)
	store := &countingStore{Store: s3store, reads: map[string]int{}}
	base := Config{Store: store, Location: loc, Layout: dla.Layout{Stack: stack}, Offline: true, NoAudit: true, Now: func() time.Time { return t0 }}

	local := base
	local.DatabaseURL = testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	want, err := Pass(ctx, local) // report mode, every object read
	if err != nil {
		t.Fatal(err)
	}
	clear(store.reads)

	c := base
	c.Mode, c.Athena, c.DatabaseURL = ModeRecover, engine, testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	r, err := Pass(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine != EngineAthena || want.Engine != EngineLocal {
		t.Errorf("engines %q and %q", r.Engine, want.Engine)
	}
	if r.Objects != want.Objects || len(r.Groups) != len(want.Groups) {
		t.Fatalf("athena: %d objects in %d groups; read: %d in %d", r.Objects, len(r.Groups), want.Objects, len(want.Groups))
	}
	for i, g := range r.Groups {
		w := want.Groups[i]
		if *g.ErrorClass != *w.ErrorClass || g.Count != w.Count || g.Class != w.Class || g.Decision != w.Decision ||
			g.FirstDate != w.FirstDate || g.LastDate != w.LastDate || slices.Compare(g.Command, w.Command) != 0 {
			t.Errorf("group %d:\nathena %+v\nread   %+v", i, g, w)
		}
	}
	if k := groupOf(t, r, knexText).Recovered; k == nil || k.Written+k.Dropped != len(byText[knexText]) || k.Failed != 0 {
		t.Fatalf("knex group: %+v, want all %d written", k, len(byText[knexText]))
	}
	started := fake.Started()
	if len(started) != 2 || len(r.Queries) != 2 || r.Queries[0].Purpose != "triage" || r.Queries[1].Purpose != "keys" || r.Queries[1].ID != started[1].ID {
		t.Fatalf("queries: %+v; the report says %+v", started, r.Queries)
	}
	knexLit, _ := athenasql.Literal(knexText)
	permLit, _ := athenasql.Literal(permanentText)
	if keys := started[1].SQL; !strings.Contains(keys, "error IN ("+knexLit+")") || strings.Contains(keys, permLit) {
		t.Errorf("the query of keys does not ask for the recovered group's text alone:\n%s", keys)
	}
	for _, key := range byText[knexText] {
		if n := store.reads[key]; n != 1 && n != 2 {
			t.Errorf("%s (recovered) read %d times, want once (twice when probed)", key, n)
		}
	}
	for _, text := range []string{missingText, permanentText} {
		for _, key := range byText[text] {
			if n := store.reads[key]; n != 0 {
				t.Errorf("%s (not recovered) read %d times, want never", key, n)
			}
		}
	}
}

// A group larger than the budget: the query of keys is read only until
// the group has its MaxObjects keys, and the budget is filled.
func TestAPassWithAthenaStopsReadingKeysAtTheBudget(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	store, loc, byText, engine, fake := athenaOutage(t, t0, 60)
	const budget = 5
	before := 0 // the pages read before recover's query of keys
	r, err := Pass(ctx, Config{Store: store, Location: loc, Layout: dla.Layout{Stack: stack}, Mode: ModeRecover, Athena: engine,
		MaxObjects: budget, Offline: true, NoAudit: true, Now: func() time.Time { return t0 },
		DatabaseURL: testsupport.NewCumulusDatabase(t, gen.ReferenceSeed()),
		Stage: func(stage string) {
			if stage == "recover" {
				before = fake.Calls("GetQueryResults")
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if k := groupOf(t, r, knexText).Recovered; k == nil || k.Selected != budget || k.Written+k.Dropped != budget {
		t.Errorf("knex group: %+v, want %d selected and written", k, budget)
	}
	// 7 rows a page: the first page holds the 5 keys; the group's other
	// rows are never asked for.
	if pages, all := fake.Calls("GetQueryResults")-before, (len(byText[knexText])+6)/7; pages != 1 || all < 2 {
		t.Errorf("%d pages of keys read, want 1 of %d", pages, all)
	}
}

// A pass with Athena needs the archive in S3: the Glue table is over S3.
func TestAPassWithAthenaRefusesALocalArchive(t *testing.T) {
	_, err := Pass(context.Background(), Config{Store: nil, Location: archive.Location{Dir: t.TempDir(), Stack: stack}, Athena: &Athena{}})
	if err == nil || !strings.Contains(err.Error(), "needs an archive in S3") {
		t.Fatalf("got %v", err)
	}
}

// glueTableOf is the Glue table of the local archive under root, as
// uploaded to bucket: each sqs/ object decoded into its columns.
func glueTableOf(t *testing.T, local archive.Store, root, bucket string) *glueTable {
	t.Helper()
	table := &glueTable{}
	for _, key := range sqsKeys(t, root) {
		body, err := local.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		d, err := dla.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		table.rows = append(table.rows, glueRow{path: "s3://" + bucket + "/" + key, date: strings.Split(key, "/")[3],
			err: d.Error, collection: d.CollectionID, provider: d.ProviderID})
	}
	return table
}

// engineAt is a pass's Athena engine on the fake endpoint at url.
func engineAt(url string) *Athena {
	client := athena.New(athena.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: aws.AnonymousCredentials{},
		RetryMaxAttempts: 2})
	names := athenasql.NamesFor(stack)
	return &Athena{Names: names, Runner: &athenarun.Runner{Client: client, Workgroup: names.Workgroup, Database: names.Database,
		PollMin: time.Millisecond, PollMax: 5 * time.Millisecond}}
}
