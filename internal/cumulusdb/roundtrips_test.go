package cumulusdb_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A message's write takes a fixed number of round trips to PostgreSQL,
// whatever its number of granules: the execution and its PDR together,
// every granule at once, then every granule's files at once; 3. With
// notifications the PDR goes after the execution's is published (its
// failure must leave the PDR unwritten), and the files go with the reads
// of what each granule publishes; 4. The count is the proxy's, on one
// connection already used (its statements prepared, the reference rows
// cached), as in the middle of a recovery: 11 for three granules with
// notifications, 4 without, before the granule writes that return rows
// were batched; 4 without, before the PDR went with the execution.
func TestAMessageIsWrittenInThreeRoundTripsHoweverManyGranules(t *testing.T) {
	now := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	msg := func(name string, granules int) gjson.Result {
		var gs []string
		for i := 0; i < granules; i++ {
			id := fmt.Sprintf("%s-G%d", name, i)
			gs = append(gs, granule(id, file("b", id+"/a", 1)+","+file("b", id+"/b", 2)))
		}
		m := message(name, "completed", 1000, "", gs...)
		return gjson.Parse(strings.Replace(m.Raw, `"payload":{`, `"payload":{"pdr":{"name":"`+name+`.PDR","PANSent":false,"PANmessage":"N/A"},`, 1))
	}
	for _, notify := range []bool{false, true} {
		t.Run(fmt.Sprintf("notifications %v", notify), func(t *testing.T) {
			_, proxy, pool := oneConnectionViaProxy(t, []byte(writersSeed))
			w := &recovery.Writer{DB: testsupport.CumulusDB(t, pool), Now: func() time.Time { return now }}
			if notify {
				w.Notifier = &testsupport.RecordingNotifier{}
			}
			trips := tripsByGranules(t, proxy, w, msg, func(n int, res *recovery.Result) {
				for _, g := range res.Granules {
					if g.Outcome != recovery.Written {
						t.Fatalf("granule %s: %s %s", g.GranuleID, g.Outcome, g.Error)
					}
				}
				if res.Execution != recovery.Written || res.Pdr != recovery.Written || len(res.Granules) != n {
					t.Fatalf("message of %d granules: execution %s, PDR %s, %d granules", n, res.Execution, res.Pdr, len(res.Granules))
				}
			})
			t.Logf("round trips by granules: %v", trips)
			want := int64(3)
			if notify {
				want = 4
			}
			for n, got := range trips {
				if got > want {
					t.Errorf("a message of %d granules took %d round trips, want at most %d (by granules: %v)", n, got, want, trips)
				}
			}
		})
	}
}

// Granules whose files fail (v21: a file without a key) cost a message two
// round trips more, however many they are: every file written alone in
// one, then every such granule marked failed with the reads of its two
// notifications in the other; 5 for a message without a PDR. Before, each
// granule took one round trip a file, then three more: 37 for a message of
// three such granules of three files in the seed-3 archive.
func TestGranulesWhoseFilesFailCostTwoRoundTripsMore(t *testing.T) {
	if testsupport.Generation(t).Partitioned() {
		t.Skip("v22 writes a granule's files in one transaction: a failure writes none of them, alone or not")
	}
	now := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	msg := func(name string, granules int) gjson.Result {
		var gs []string
		for i := 0; i < granules; i++ {
			id := fmt.Sprintf("%s-G%d", name, i)
			gs = append(gs, granule(id, `{"bucket":"b","fileName":"nokey","size":1}`+","+file("b", id+"/a", 1)+","+file("b", id+"/b", 2)))
		}
		return message(name, "completed", 1000, "", gs...)
	}
	dbURL, proxy, pool := oneConnectionViaProxy(t, []byte(writersSeed))
	rec := &testsupport.RecordingNotifier{}
	w := &recovery.Writer{DB: testsupport.CumulusDB(t, pool), Now: func() time.Time { return now }, Notifier: rec}
	trips := tripsByGranules(t, proxy, w, msg, func(n int, res *recovery.Result) {
		for _, g := range res.Granules {
			if g.Outcome != recovery.Written || g.FilesError == "" {
				t.Fatalf("granule %s: %s %s, files error %q; want written with its files failed", g.GranuleID, g.Outcome, g.Error, g.FilesError)
			}
		}
		if got := testsupport.QueryInt(t, dbURL, fmt.Sprintf(`SELECT count(*) FROM files f JOIN granules g ON g.cumulus_id = f.granule_cumulus_id
WHERE g.granule_id LIKE 'm%d-G%%' AND g.status = 'failed'`, n)); got != 2*n {
			t.Fatalf("message of %d granules: %d files kept on failed granules, want %d", n, got, 2*n)
		}
	})
	t.Logf("round trips by granules: %v", trips)
	for n, got := range trips {
		if got > 5 {
			t.Errorf("a message of %d granules whose files fail took %d round trips, want at most 5 (by granules: %v)", n, got, trips)
		}
	}
}

// Opening the database and taking the archive lock, before the first
// object is read, take one round trip a query (no statement is prepared
// for a query made once) plus the connection's: 10 at most on v21 and v22
// (the fingerprint and stamp, the generation, the privileges, the
// sequences), and 1 for the lock on the connection opened. Each of them
// took two before, 19 in all, 0.4 s of a recovery 20 ms away.
func TestOpeningTheDatabaseTakesARoundTripAQuery(t *testing.T) {
	dbURL := testsupport.NewCumulusDatabase(t, []byte(writersSeed))
	u, _ := url.Parse(dbURL)
	proxy := testsupport.NewTCPProxy(t, u.Host)
	cfg, err := pgxpool.ParseConfig(proxy.ViaProxy(t, dbURL))
	if err != nil {
		t.Fatal(err)
	}
	before := proxy.RoundTrips()
	db, err := cumulusdb.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	opened := proxy.RoundTrips() - before
	lock, err := cumulusdb.LockArchive(context.Background(), db.Pool, "s3://b/p")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	locked := proxy.RoundTrips() - before - opened
	if opened > 10 || locked > 1 {
		t.Fatalf("opening took %d round trips (want at most 10), the lock %d (want 1)", opened, locked)
	}
}

// oneConnectionViaProxy is a Cumulus database seeded with seed, and a pool
// of one connection to it through a proxy that counts the round trips.
func oneConnectionViaProxy(t *testing.T, seed []byte) (string, *testsupport.TCPProxy, *pgxpool.Pool) {
	t.Helper()
	dbURL := testsupport.NewCumulusDatabase(t, seed)
	u, _ := url.Parse(dbURL)
	proxy := testsupport.NewTCPProxy(t, u.Host)
	cfg, err := pgxpool.ParseConfig(proxy.ViaProxy(t, dbURL))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return dbURL, proxy, pool
}

// tripsByGranules writes msg of 3 and 1 granules to warm the connection
// (every statement prepared, every lookup cached), then of 1, 3 and 8,
// each checked by check, and returns the round trips each of those took.
func tripsByGranules(t *testing.T, proxy *testsupport.TCPProxy, w *recovery.Writer, msg func(name string, granules int) gjson.Result,
	check func(n int, res *recovery.Result)) map[int]int64 {
	t.Helper()
	for _, n := range []int{3, 1} {
		write(t, w, msg(fmt.Sprintf("warm%d", n), n))
	}
	trips := map[int]int64{}
	for _, n := range []int{1, 3, 8} {
		before := proxy.RoundTrips()
		res := write(t, w, msg(fmt.Sprintf("m%d", n), n))
		trips[n] = proxy.RoundTrips() - before
		check(n, res)
	}
	return trips
}
