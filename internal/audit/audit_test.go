package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

func localStore(t *testing.T) archive.Store {
	t.Helper()
	s, err := archive.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestARecordReadsBackWithItsItemsAndCounts(t *testing.T) {
	ctx := context.Background()
	s := localStore(t)
	start := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	r, err := Begin(ctx, s, "stack/dead-letter-archive/audit/", Started{Tool: "dla", Verb: "recover", StartedAt: start,
		Argv: []string{"dla", "recover", "--database-url", "postgres://u:hunter2@db:5432/c"}, Reason: "INC-1"},
		Options{ChunkLines: 3, ChunkEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		r.Add(Item{Key: fmt.Sprintf("k%d", i), Result: "written", Action: "deleted"})
	}
	if err := r.Finish(ctx, Finished{Counts: map[string]int{"deleted": 7}, ExitCode: 0}); err != nil {
		t.Fatal(err)
	}
	runs, problems, err := List(ctx, s, "stack/dead-letter-archive/audit/", Filter{})
	if err != nil || len(problems) > 0 || len(runs) != 1 {
		t.Fatalf("runs %d, problems %v, err %v", len(runs), problems, err)
	}
	run := runs[0]
	if run.Finished == nil || run.Finished.Items != 7 || run.Reason != "INC-1" {
		t.Fatalf("run %+v", run)
	}
	if strings.Contains(strings.Join(run.Argv, " "), "hunter2") {
		t.Fatalf("the password is in the record: %v", run.Argv)
	}
	if err := run.LoadItems(ctx, s); err != nil || len(run.Items) != 7 {
		t.Fatalf("items %d, err %v", len(run.Items), err)
	}
	if len(run.Chunks) < 3 {
		t.Errorf("7 items in chunks of 3 came in %d chunks", len(run.Chunks))
	}
}

func TestARunThatNeverFinishesIsListedWithTheChunksItWrote(t *testing.T) {
	ctx := context.Background()
	s := localStore(t)
	r, err := Begin(ctx, s, "a/", Started{Tool: "pushdlq", Verb: "replay"}, Options{ChunkLines: 2, ChunkEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r.Add(Item{MessageID: fmt.Sprint(i), Action: "replayed"})
	}
	// The flusher writes full chunks in the background: wait for two.
	deadline := time.Now().Add(5 * time.Second)
	for {
		runs, _, _ := List(ctx, s, "a/", Filter{})
		if len(runs) == 1 && len(runs[0].Chunks) >= 2 {
			run := runs[0]
			if run.Finished != nil {
				t.Fatal("a run that did not finish has a finished record")
			}
			_ = run.LoadItems(ctx, s)
			if len(run.Items) < 4 || run.Counts()["replayed"] != len(run.Items) {
				t.Fatalf("items %d, counts %v", len(run.Items), run.Counts())
			}
			// Checked: now stop the flusher, still writing the last
			// chunk, before the folder is removed.
			_ = r.Finish(ctx, Finished{})
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two chunks written: %+v", runs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestTwoRunsNeverShareARecord(t *testing.T) {
	ctx := context.Background()
	s := localStore(t)
	start := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	if _, err := Begin(ctx, s, "", Started{RunID: "same", StartedAt: start}, Options{}); err != nil {
		t.Fatal(err)
	}
	_, err := Begin(ctx, s, "", Started{RunID: "same", StartedAt: start, Verb: "another"}, Options{})
	var ue *UnwritableError
	if !errors.As(err, &ue) || !errors.Is(err, archive.ErrExists) {
		t.Fatalf("a second record with the same id: %v", err)
	}
}

func TestAnUnwritableLocationRefusesTheRecord(t *testing.T) {
	s := localStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = ctx
	_, err := Begin(context.Background(), failingStore{s}, "", Started{}, Options{})
	var ue *UnwritableError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("err %v", err)
	}
}

type failingStore struct{ archive.Store }

func (failingStore) PutNew(context.Context, string, []byte, string) error {
	return errors.New("AccessDenied")
}

func TestRedactArgvLeavesNoSecret(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"--database-url", "postgres://alice:s3cr%40t@db:5432/cumulus?sslmode=require"},
			[]string{"--database-url", "postgres://alice:REDACTED@db:5432/cumulus?sslmode=require"}},
		{[]string{"--database-url=postgres://alice:pw@db/c"}, []string{"--database-url=postgres://alice:REDACTED@db/c"}},
		{[]string{"--database-url", "host=db password='a b' dbname=c"}, []string{"--database-url", "host=db password=REDACTED dbname=c"}},
		{[]string{"--token", "abc"}, []string{"--token", "REDACTED"}},
		{[]string{"--api-token=abc"}, []string{"--api-token=REDACTED"}},
		{[]string{"--token-file", "/run/tok", "--db-secret", "arn:aws:secretsmanager:x"}, []string{"--token-file", "/run/tok", "--db-secret", "arn:aws:secretsmanager:x"}},
		{[]string{"postgres://u:p@[::1]:5/x%zz"}, []string{"postgres://u:REDACTED@[::1]:5/x%zz"}},
	} {
		got := RedactArgv(c.in)
		if strings.Join(got, "\x00") != strings.Join(c.want, "\x00") {
			t.Errorf("RedactArgv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// lossyStore lands a put and then answers it with an error, as a put whose
// reply was lost does (the SDK's retry then meets its own object), for the
// first lose puts of chunks; failing refuses every chunk put outright.
type lossyStore struct {
	archive.Store
	lose    int
	failing bool
}

func (l *lossyStore) PutNew(ctx context.Context, key string, body []byte, origin string) error {
	if strings.Contains(key, "/items-") {
		if l.failing {
			return errors.New("ServiceUnavailable")
		}
		if l.lose > 0 {
			l.lose--
			if err := l.Store.PutNew(ctx, key, body, origin); err != nil {
				return err
			}
			return errors.New("read tcp: connection reset by peer")
		}
	}
	return l.Store.PutNew(ctx, key, body, origin)
}

func TestAChunkWhosePutReplyWasLostIsWrittenOnce(t *testing.T) {
	ctx := context.Background()
	ls := &lossyStore{Store: localStore(t), lose: 1}
	r, err := Begin(ctx, ls, "", Started{Verb: "replay"}, Options{ChunkLines: 4, ChunkEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		r.Add(Item{MessageID: fmt.Sprint(i), Action: "replayed"})
	}
	if err := r.Finish(ctx, Finished{}); err != nil {
		t.Fatal(err)
	}
	runs, _, err := List(ctx, ls, "", Filter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %d err %v", len(runs), err)
	}
	_ = runs[0].LoadItems(ctx, ls)
	seen := map[string]int{}
	for _, it := range runs[0].Items {
		seen[it.MessageID]++
	}
	if len(runs[0].Items) != 10 || len(seen) != 10 {
		t.Fatalf("%d items for 10 (by id: %v)", len(runs[0].Items), seen)
	}
}

func TestChunksTheStoreRefusesAreCountedUnrecorded(t *testing.T) {
	ctx := context.Background()
	ls := &lossyStore{Store: localStore(t), failing: true}
	var warned []string
	r, err := Begin(ctx, ls, "", Started{Verb: "recover"}, Options{ChunkLines: 2, ChunkEvery: time.Hour,
		Warnf: func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r.Add(Item{Key: fmt.Sprint(i), Action: "deleted"})
	}
	err = r.Finish(ctx, Finished{Counts: map[string]int{"deleted": 5}})
	if err == nil || !strings.Contains(err.Error(), "5 items could not be written") {
		t.Fatalf("Finish: %v", err)
	}
	runs, _, _ := List(ctx, ls, "", Filter{})
	if len(runs) != 1 || runs[0].Finished == nil || runs[0].Finished.Unrecorded != 5 || runs[0].Finished.Items != 5 {
		t.Fatalf("the finished record does not count the 5 unrecorded items: %+v", runs)
	}
	if len(warned) != 1 {
		t.Errorf("warned %d times, want once: %q", len(warned), warned)
	}
}

// A run that adds items as fast as chunks are written wrote a chunk of a
// few items after every chunk (44 chunks for 1,800 items on S3, each a
// PUT and a HEAD): while a run goes on only whole chunks are written, and
// the part left goes at the next tick or at the end.
func TestItemsAddedFasterThanChunksAreWrittenGoInWholeChunks(t *testing.T) {
	ctx := context.Background()
	s := localStore(t)
	r, err := Begin(ctx, s, "", Started{Verb: "recover"}, Options{ChunkLines: 500, ChunkEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1800 {
		r.Add(Item{Key: fmt.Sprint(i), Action: "deleted"})
		if i%5 == 0 {
			time.Sleep(50 * time.Microsecond) // a run's pace: a chunk write meets new items
		}
	}
	if err := r.Finish(ctx, Finished{}); err != nil {
		t.Fatal(err)
	}
	runs, _, _ := List(ctx, s, "", Filter{})
	if len(runs) != 1 || len(runs[0].Chunks) != 4 {
		t.Fatalf("1,800 items in chunks of 500 came in %d chunks, want 4", len(runs[0].Chunks))
	}
	if err := runs[0].LoadItems(ctx, s); err != nil || len(runs[0].Items) != 1800 {
		t.Fatalf("%d items, err %v", len(runs[0].Items), err)
	}
}
