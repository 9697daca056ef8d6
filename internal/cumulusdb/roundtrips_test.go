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

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// A message's write takes a fixed number of round trips to PostgreSQL,
// whatever its number of granules, with or without the notifications:
// the execution, the PDR, every granule at once, then every granule's
// files (and, for the notifications, the read of what each one
// publishes) at once. The count is the proxy's, on one connection
// already used (its statements prepared, the reference rows cached), as
// in the middle of a recovery: 11 for three granules with notifications,
// 4 without, before the granule writes that return rows were batched.
func TestAMessageIsWrittenInFourRoundTripsHoweverManyGranules(t *testing.T) {
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
			dbURL := testsupport.NewCumulusDatabase(t, []byte(writersSeed))
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
			w := &recovery.Writer{DB: testsupport.CumulusDB(t, pool), Now: func() time.Time { return now }}
			if notify {
				w.Notifier = &testsupport.RecordingNotifier{}
			}
			for _, n := range []int{3, 1} { // warm: every statement prepared, every lookup cached
				write(t, w, msg(fmt.Sprintf("warm%d", n), n))
			}
			trips := map[int]int64{}
			for _, n := range []int{1, 3, 8} {
				before := proxy.RoundTrips()
				res := write(t, w, msg(fmt.Sprintf("m%d", n), n))
				trips[n] = proxy.RoundTrips() - before
				for _, g := range res.Granules {
					if g.Outcome != recovery.Written {
						t.Fatalf("granule %s: %s %s", g.GranuleID, g.Outcome, g.Error)
					}
				}
				if res.Execution != recovery.Written || res.Pdr != recovery.Written || len(res.Granules) != n {
					t.Fatalf("message of %d granules: execution %s, PDR %s, %d granules", n, res.Execution, res.Pdr, len(res.Granules))
				}
			}
			t.Logf("round trips by granules: %v", trips)
			for n, got := range trips {
				if got > 4 {
					t.Errorf("a message of %d granules took %d round trips, want at most 4 (by granules: %v)", n, got, trips)
				}
			}
		})
	}
}
