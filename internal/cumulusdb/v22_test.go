package cumulusdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// The write rules Cumulus v22 has of its own (partitions, guard tables),
// each on a v22.3 database whatever generation the run tests; the rules
// v21 and v22 share run on both through the other tests of this package.

const (
	feb2024 = int64(1706745600000) // 2024-02-01, in executions_2024_q1
	may2024 = int64(1714521600000) // 2024-05-01, in executions_2024_q2
)

// newV22DB is a v22.3 database with collections C___1 and D___2 and
// provider P, and a writer on it whose clock is 2024-06-01.
func newV22DB(t *testing.T) (*pgxpool.Pool, *recovery.Writer) {
	t.Helper()
	_, pool, w := newV22WritersDB(t)
	return pool, w
}

func inCollection(m gjson.Result, name, version string) gjson.Result {
	return gjson.Parse(strings.Replace(m.Raw, `"name":"C","version":"1"`, `"name":"`+name+`","version":"`+version+`"`, 1))
}

// An execution sent again with another created_at keeps its cumulus_id and
// moves to that quarter's partition; its guard row stays one, and the
// references carrying its created_at (granule links) follow it.
func TestV22ExecutionResentWithAnotherCreatedAtMovesPartition(t *testing.T) {
	pool, w := newV22DB(t)
	write(t, w, message("e1", "completed", feb2024, "", granule("G1", file("b", "k1", 1))))
	where := func() string {
		return queryString(t, pool, `SELECT tableoid::regclass::text || ' ' || cumulus_id FROM executions WHERE arn LIKE '%:e1'`)
	}
	first := where()
	if !strings.HasPrefix(first, "executions_2024_q1 ") {
		t.Fatalf("first write in %s", first)
	}
	write(t, w, message("e1", "completed", may2024, "", granule("G1", file("b", "k1", 1))))
	second := where()
	if second != "executions_2024_q2 "+strings.Fields(first)[1] {
		t.Fatalf("after a new created_at: %s (was %s)", second, first)
	}
	if s := queryString(t, pool, `SELECT count(*)::text FROM executions_global_unique`); s != "1" {
		t.Fatalf("guard rows %s", s)
	}
	if s := queryString(t, pool, `SELECT string_agg((ge.execution_created_at = x.created_at AND ge.collection_cumulus_id = g.collection_cumulus_id)::text, ',')
FROM granules_executions ge JOIN executions x ON x.cumulus_id = ge.execution_cumulus_id JOIN granules g ON g.cumulus_id = ge.granule_cumulus_id`); s != "true" {
		t.Fatalf("links carry the execution's created_at and the granule's collection: %s", s)
	}
}

// A late "running" execution sets only its four columns: the status stays.
func TestV22RunningExecutionAfterCompletedKeepsStatus(t *testing.T) {
	pool, w := newV22DB(t)
	write(t, w, message("e2", "completed", feb2024, "", granule("G2", "")))
	write(t, w, message("e2", "running", feb2024, "", granule("G2", "")))
	if s := queryString(t, pool, `SELECT status FROM executions WHERE arn LIKE '%:e2'`); s != "completed" {
		t.Fatalf("status %s", s)
	}
}

// A completed granule whose granule_id another collection holds is
// refused with v22.2's error (the other collection's cumulus_id), and the
// row stays where it is. A running one updates the granule in the
// collection that holds it, as v22's update keyed by granule_id does.
func TestV22GranuleOfAnotherCollection(t *testing.T) {
	pool, w := newV22DB(t)
	write(t, w, message("e3", "completed", feb2024, "", granule("G3", file("b", "k3", 1))))
	c := queryString(t, pool, `SELECT cumulus_id::text FROM collections WHERE name = 'C'`)
	_, err := w.Write(context.Background(), inCollection(message("e4", "completed", may2024, "", granule("G3", file("b", "k3", 1))), "D", "2"))
	var agg *recovery.AggregateError
	if !errors.As(err, &agg) || !strings.Contains(err.Error(), "Error: A granule already exists for granuleId: G3 in a different collection "+c+".") {
		t.Fatalf("want v22's cross-collection error, got %v", err)
	}
	if s := queryString(t, pool, `SELECT c.name || ' ' || g.status FROM granules g JOIN collections c ON c.cumulus_id = g.collection_cumulus_id`); s != "C completed" {
		t.Fatalf("granule %s", s)
	}
	// Older than the row: the guard drops the update and no error is
	// raised, as v22 raises it only on the update's own conflict.
	res := write(t, w, inCollection(message("e5", "completed", 1000, "", granule("G3", "")), "D", "2"))
	if res.Granules[0].Outcome != recovery.Dropped {
		t.Fatalf("older write from another collection: %+v", res.Granules)
	}
	res = write(t, w, inCollection(message("e6", "running", may2024, "", granule("G3", "")), "D", "2"))
	if res.Granules[0].Outcome != recovery.Written {
		t.Fatalf("running from another collection: %+v", res.Granules)
	}
	if s := queryString(t, pool, `SELECT c.name || ' ' || g.status FROM granules g JOIN collections c ON c.cumulus_id = g.collection_cumulus_id`); s != "C running" {
		t.Fatalf("granule %s", s)
	}
}

// A file of another granule of the same collection is re-pointed to the
// granule written; one held by another collection's granule fails the
// granule's files (the guard table's unique violation), all of them, and
// the granule is marked failed.
func TestV22FileOfAnotherGranule(t *testing.T) {
	pool, w := newV22DB(t)
	write(t, w, message("e7", "completed", feb2024, "", granule("G7a", file("b", "shared", 1)+","+file("b", "own", 2))))
	write(t, w, message("e8", "completed", feb2024, "", granule("G7b", file("b", "shared", 3))))
	if s := queryString(t, pool, `SELECT g.granule_id || ' ' || f.file_size FROM files f JOIN granules g ON g.cumulus_id = f.granule_cumulus_id WHERE key = 'shared'`); s != "G7b 3" {
		t.Fatalf("shared file: %s", s)
	}
	res := write(t, w, inCollection(message("e9", "completed", feb2024, "", granule("G7c", file("b", "own", 4)+","+file("b", "new", 5))), "D", "2"))
	if g := res.Granules[0]; g.Outcome != recovery.Written || !strings.Contains(g.FilesError, "files_global_unique") {
		t.Fatalf("a file of another collection: %+v", g)
	}
	if s := queryString(t, pool, `SELECT status FROM granules WHERE granule_id = 'G7c'`); s != "failed" {
		t.Fatalf("status %s", s)
	}
	if s := queryString(t, pool, `SELECT string_agg(g.granule_id || ':' || f.key, ',' ORDER BY f.key) FROM files f JOIN granules g ON g.cumulus_id = f.granule_cumulus_id`); s != "G7a:own,G7b:shared" {
		t.Fatalf("files %s", s)
	}
}

// A PDR links to its execution by cumulus_id and created_at, and follows
// the execution when it moves partition.
func TestV22PdrLinksToAPartitionedExecution(t *testing.T) {
	pool, w := newV22DB(t)
	pdr := `,"pdr":{"name":"P1.PDR","PANSent":false,"PANmessage":"N/A"}`
	m := func(start int64) gjson.Result {
		return gjson.Parse(strings.Replace(message("e10", "completed", start, "", granule("G10", "")).Raw, `"payload":{`, `"payload":{`+pdr[1:]+`,`, 1))
	}
	res := write(t, w, m(feb2024))
	if res.Pdr != recovery.Written {
		t.Fatalf("pdr %+v", res)
	}
	check := func(want string) {
		t.Helper()
		if s := queryString(t, pool, `SELECT to_char(p.execution_created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') || ' ' || (p.execution_created_at = x.created_at)::text
FROM pdrs p JOIN executions x ON x.cumulus_id = p.execution_cumulus_id`); s != want {
			t.Fatalf("pdr's execution: %s, want %s", s, want)
		}
	}
	check("2024-02-01 true")
	write(t, w, m(may2024))
	check("2024-05-01 true")
}

// A v22 database without the partition a message's created_at needs (no
// quarter, no default partition) fails the write as the environment's
// error: transient, never the message's.
func TestV22MissingPartitionIsTheEnvironments(t *testing.T) {
	pool, w := newV22DB(t)
	if _, err := pool.Exec(context.Background(), `ALTER TABLE executions DETACH PARTITION executions_default`); err != nil {
		t.Fatal(err)
	}
	_, err := w.Write(context.Background(), message("e11", "completed", 1000, "", granule("G11", "")))
	if !recovery.IsTransient(err) || !strings.Contains(err.Error(), "no partition") || !strings.Contains(err.Error(), "create the partition of 1970 Q1") {
		t.Fatalf("want a transient error naming the missing partition, got %v (transient %v)", err, recovery.IsTransient(err))
	}
}

// v22.1.1 and later publish each record with the CMR and metrics
// providers of the message's collection first (CUMULUS-4866): the granule
// inside its envelope's record, the execution and the PDR at the top.
func TestV22NotificationsCarryTheCollectionsProviders(t *testing.T) {
	pool, w := newV22DB(t)
	if _, err := pool.Exec(context.Background(), `UPDATE collections SET cmr_provider = 'CMR_P', metrics_provider = 'METRICS_P' WHERE name = 'C'`); err != nil {
		t.Fatal(err)
	}
	n := &testsupport.RecordingNotifier{}
	w.Notifier = n
	pdr := `"pdr":{"name":"P2.PDR","PANSent":false,"PANmessage":"N/A"},`
	m := gjson.Parse(strings.Replace(message("e12", "completed", feb2024, "", granule("G12", file("b", "k12", 1))).Raw, `"payload":{`, `"payload":{`+pdr, 1))
	write(t, w, m)
	if len(n.All) != 3 {
		t.Fatalf("%d notifications", len(n.All))
	}
	for _, p := range n.All {
		msg := p.Message
		if p.Topic == recovery.TopicGranule {
			msg = gjson.Get(msg, "record").Raw
		}
		if !strings.HasPrefix(msg, `{"metricsProvider":"METRICS_P","cmrProvider":"CMR_P",`) {
			t.Errorf("%s: %s", p.Topic, p.Message)
		}
	}
}
