package autorecover

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

const (
	knexText      = gen.OutageTransient // the error texts of dla dev gen-archive --outage
	missingText   = gen.OutageFixFirst
	permanentText = gen.OutagePermanent
	refusedDB     = "postgres://postgres@127.0.0.1:1/cumulus?connect_timeout=2"
	stack         = "s"
)

// outageArchive writes, into a local archive under root, the DLA records
// of a generated archive dated around now, three in five with a Knex
// timeout (transient), one a missing collection (fix-first), one a schema
// error (permanent); it returns the keys of each.
func outageArchive(t *testing.T, root string, now time.Time, count int) (store archive.Store, byText map[string][]string) {
	t.Helper()
	texts := []string{knexText, knexText, knexText, missingText, permanentText}
	return writeArchive(t, root, now, count, func(i int) string { return texts[i%len(texts)] }, true)
}

// writeArchive writes, into a local archive under root, the DLA records
// of a generated archive dated around now, the i-th with the error text
// textOf(i); it returns the keys of each text. With check, each text must
// decode back as written.
func writeArchive(t *testing.T, root string, now time.Time, count int, textOf func(i int) string, check bool) (store archive.Store, byText map[string][]string) {
	t.Helper()
	store, err := archive.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	byText = map[string][]string{}
	i := 0
	err = gen.Generate(gen.Options{Stack: stack, Count: count, Seed: 41, Start: now.Add(-36 * time.Hour), Days: 1, MinGranules: 1, MaxGranules: 2, Malformed: -1},
		func(o gen.Object) error {
			if o.Kind != "dla-record" {
				return nil
			}
			var obj map[string]any
			if err := json.Unmarshal(o.Body, &obj); err != nil {
				return err
			}
			text := textOf(i)
			i++
			obj["error"] = text
			body, _ := json.Marshal(obj)
			if d, err := dla.Decode(body); check && (err != nil || d.Error != text) {
				t.Fatalf("%s: decoded error %q (%v)", o.Key, d.Error, err)
			}
			byText[text] = append(byText[text], o.Key)
			return store.Put(context.Background(), o.Key, body)
		})
	if err != nil {
		t.Fatal(err)
	}
	return store, byText
}

// sqsKeys is the archive's sqs/ keys, sorted.
func sqsKeys(t *testing.T, root string) []string {
	var keys []string
	_ = filepath.WalkDir(filepath.Join(root, stack, "dead-letter-archive", "sqs"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(root, p)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(keys)
	return keys
}

type notifications struct {
	mu   sync.Mutex
	sent []Notification
}

func (n *notifications) notify(_ context.Context, m Notification) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, m)
	return "m-" + string(rune('0'+len(n.sent))), nil
}

func (n *notifications) count() int { n.mu.Lock(); defer n.mu.Unlock(); return len(n.sent) }

func groupOf(t *testing.T, r *Report, text string) GroupReport {
	t.Helper()
	for _, g := range r.Groups {
		if g.ErrorClass != nil && *g.ErrorClass == dla.ErrorClass(text) {
			return g
		}
	}
	t.Fatalf("no group %q in %+v", text, r.Groups)
	return GroupReport{}
}

// An outage, pass by pass: while the database refuses, a pass probes,
// moves nothing, records the backoff and notifies once; a pass inside the
// backoff does not probe and sends nothing; once the database is back, a
// pass writes every transient object, with the rows a plain recover of
// the same selection writes, and leaves the fix-first and permanent
// groups untouched, saying they need a person.
func TestAnOutageIsDrainedByPassesOnceTheDatabaseIsBack(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	root := t.TempDir()
	store, byText := outageArchive(t, root, t0, 120)
	before := sqsKeys(t, root)
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	runStart := time.Now().Add(-time.Second)
	var sent notifications
	cfg := func(now time.Time, db string) Config {
		return Config{Store: store, Location: archive.Location{Dir: root, Stack: stack}, Layout: dla.Layout{Stack: stack},
			Mode: ModeRecover, DatabaseURL: db, Offline: true, Concurrency: 4, Notify: sent.notify, Topic: "arn:aws:sns:us-east-1:123456789012:ops",
			Now: func() time.Time { return now }}
	}

	// 1. The database refuses: the transient group waits 15 minutes.
	r1, err := Pass(ctx, cfg(t0, refusedDB))
	if err != nil {
		t.Fatal(err)
	}
	knex := groupOf(t, r1, knexText)
	if knex.Decision != Try || knex.Probe == nil || knex.Probe.Outcome != ProbeEnvironment || knex.WaitUntil == nil || !knex.WaitUntil.Equal(t0.Add(FirstWait)) {
		t.Fatalf("pass 1, knex group: %+v probe %+v", knex, knex.Probe)
	}
	if got := sqsKeys(t, root); !slices.Equal(got, before) {
		t.Fatalf("pass 1 changed the archive: %d objects, %d before", len(got), len(before))
	}
	if sent.count() != 1 || !r1.Notification.Sent || r1.Audit == "" {
		t.Fatalf("pass 1: %d notifications, report %+v, record %q", sent.count(), r1.Notification, r1.Audit)
	}
	if !strings.Contains(sent.sent[0].Text, "waits for the database (1 groups)") {
		t.Errorf("pass 1's notification:\n%s", sent.sent[0].Text)
	}

	// 2. Inside the backoff: not probed, nothing new to say.
	r2, err := Pass(ctx, cfg(t0.Add(5*time.Minute), refusedDB))
	if err != nil {
		t.Fatal(err)
	}
	if k := groupOf(t, r2, knexText); k.Decision != Waits || k.Probe != nil || !k.WaitUntil.Equal(t0.Add(FirstWait)) {
		t.Errorf("pass 2, knex group: %+v probe %+v", k, k.Probe)
	}
	if sent.count() != 1 || r2.Notification.Sent {
		t.Errorf("pass 2 notified again: %+v", r2.Notification)
	}

	// 3. The database is back, the backoff over: the transient group is
	// recovered, the others are a person's.
	r3, err := Pass(ctx, cfg(t0.Add(16*time.Minute), dbURL))
	if err != nil {
		t.Fatal(err)
	}
	k := groupOf(t, r3, knexText)
	if k.Probe == nil || k.Probe.Outcome != ProbeWrites || k.Recovered == nil || k.Recovered.Selected != len(byText[knexText]) ||
		k.Recovered.Written+k.Recovered.Dropped != len(byText[knexText]) {
		t.Fatalf("pass 3, knex group: %+v probe %+v recovered %+v", k, k.Probe, k.Recovered)
	}
	for _, text := range []string{missingText, permanentText} {
		if g := groupOf(t, r3, text); g.Decision != Person || g.Recovered != nil {
			t.Errorf("pass 3, %q: %+v", text, g)
		}
	}
	want := append(append([]string{}, byText[missingText]...), byText[permanentText]...)
	slices.Sort(want)
	if got := sqsKeys(t, root); !slices.Equal(got, want) {
		t.Errorf("after pass 3 the archive holds %d objects, want the %d fix-first and permanent ones", len(got), len(want))
	}
	if sent.count() != 2 || !strings.Contains(sent.sent[1].Text, "needs a person (2 groups)") {
		t.Errorf("pass 3: %d notifications; last:\n%s", sent.count(), sent.sent[len(sent.sent)-1].Text)
	}

	// The rows are those of a plain recover of the same selection.
	plainRoot := t.TempDir()
	plainStore, _ := outageArchive(t, plainRoot, t0, 120)
	plainDB := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	class := dla.ErrorClass(knexText)
	s, err := dlarecover.Open(ctx, dlarecover.Options{Store: plainStore, Location: archive.Location{Dir: plainRoot, Stack: stack},
		Scope:       selection.Scope{Layout: dla.Layout{Stack: stack}, Area: dla.AreaSQS, Filter: dla.Filter{ErrorClass: &class}},
		DatabaseURL: plainDB, Offline: true, Concurrency: 4, Now: func() time.Time { return t0.Add(16 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Plan(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, func(dlarecover.Object) error { return nil }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	got, plain := testsupport.DumpTables(t, dbURL, runStart), testsupport.DumpTables(t, plainDB, runStart)
	if !reflect.DeepEqual(got, plain) {
		t.Errorf("the pass's rows differ from a plain recover's of the same selection")
	}
	if n := len(got["executions"]); n == 0 {
		t.Error("no executions written")
	}
}

// Report mode changes nothing: no row, no object, whatever the probe says.
func TestAReportPassChangesNoRowAndNoObject(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	root := t.TempDir()
	store, _ := outageArchive(t, root, t0, 40)
	before := sqsKeys(t, root)
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	runStart := time.Now().Add(-time.Second)
	seeded := testsupport.DumpTables(t, dbURL, runStart)
	r, err := Pass(ctx, Config{Store: store, Location: archive.Location{Dir: root, Stack: stack}, Layout: dla.Layout{Stack: stack},
		DatabaseURL: dbURL, Offline: true, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != ModeReport || groupOf(t, r, knexText).Probe.Outcome != ProbeWrites {
		t.Fatalf("report: mode %q, knex %+v", r.Mode, groupOf(t, r, knexText).Probe)
	}
	if got := sqsKeys(t, root); !slices.Equal(got, before) {
		t.Errorf("a report pass changed the archive")
	}
	if got := testsupport.DumpTables(t, dbURL, runStart); !reflect.DeepEqual(got, seeded) {
		t.Errorf("a report pass changed rows")
	}
}

// A pass while another holds the archive (a Lambda in another sandbox,
// its lease running) exits at once, naming it, and changes nothing.
func TestASecondPassExitsWhileAnotherHoldsTheArchive(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	root := t.TempDir()
	store, _ := outageArchive(t, root, t0, 20)
	before := sqsKeys(t, root)
	until := time.Now().Add(10 * time.Minute)
	held, _ := json.Marshal(archive.LockHolder{Command: "dla autorecover", Host: "169.254.76.1", PID: 8, Since: time.Now(), Until: &until})
	layout := dla.Layout{Stack: stack}
	if err := store.Put(ctx, LockKey(layout), held); err != nil {
		t.Fatal(err)
	}
	r, err := Pass(ctx, Config{Store: store, Location: archive.Location{Dir: root, Stack: stack}, Layout: layout, Mode: ModeRecover,
		DatabaseURL: refusedDB, Offline: true, Now: func() time.Time { return t0 }})
	if !errors.Is(err, ErrLocked) || r != nil || !strings.Contains(err.Error(), "169.254.76.1") {
		t.Fatalf("pass beside a running one: %v (report %v)", err, r)
	}
	if got := sqsKeys(t, root); !slices.Equal(got, before) {
		t.Error("the refused pass changed the archive")
	}
	if keys, _ := os.ReadDir(filepath.Join(root, stack, "dead-letter-archive", "audit")); len(keys) != 0 {
		t.Error("the refused pass wrote a record")
	}
}

// A fix-first group is a person's until its records exist; once the
// missing collection is created, the next pass finds it ready, probes it
// and recovers it.
func TestAFixFirstGroupIsRecoveredOnceItsCollectionExists(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	root := t.TempDir()
	store, byText := outageArchive(t, root, t0, 60)
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	cfg := Config{Store: store, Location: archive.Location{Dir: root, Stack: stack}, Layout: dla.Layout{Stack: stack},
		Mode: ModeRecover, DatabaseURL: dbURL, Offline: true, Now: func() time.Time { return t0 }}
	r1, err := Pass(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if g := groupOf(t, r1, missingText); g.Decision != Person || g.Recovered != nil {
		t.Fatalf("pass 1, fix-first group: %+v", g)
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := cumulusdb.ParseSeed([]byte(`{"collections":[{"name":"NOPE","version":"001"}],"providers":[],"asyncOperations":[],"parentExecutions":[]}`))
	if err == nil {
		err = cumulusdb.ApplySeed(ctx, conn, seed, "")
	}
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}

	cfg.Now = func() time.Time { return t0.Add(time.Minute) }
	r2, err := Pass(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := groupOf(t, r2, missingText)
	if g.Decision != Try || g.Recovered == nil || g.Recovered.Written+g.Recovered.Dropped != len(byText[missingText]) {
		t.Fatalf("pass 2, fix-first group: %+v recovered %+v", g, g.Recovered)
	}
	for _, k := range sqsKeys(t, root) {
		if slices.Contains(byText[missingText], k) {
			t.Errorf("%s still in sqs/", k)
		}
	}
}

// failingList is an archive whose listing fails (S3 denying ListBucket).
type failingList struct{ archive.Store }

func (failingList) List(context.Context, string, bool, func(archive.Entry) error) error {
	return errors.New("AccessDenied: not allowed to list")
}

// A pass that cannot read the archive says so and sends no notification:
// a report of nothing would read as an all-clear.
func TestAPassThatCannotReadTheArchiveDoesNotNotify(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC()
	root := t.TempDir()
	store, _ := outageArchive(t, root, t0, 10)
	var sent notifications
	r, err := Pass(ctx, Config{Store: failingList{store}, Location: archive.Location{Dir: root, Stack: stack}, Layout: dla.Layout{Stack: stack},
		DatabaseURL: refusedDB, Offline: true, Notify: sent.notify, Topic: "t", NoAudit: true, Now: func() time.Time { return t0 }})
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("pass over an unlistable archive: %v", err)
	}
	if sent.count() != 0 || r == nil || r.Notification.Sent {
		t.Errorf("notified %d times; report %+v", sent.count(), r)
	}
}
