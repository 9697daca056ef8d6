package autorecover

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// countingStore counts the reads of each object under sqs/.
type countingStore struct {
	archive.Store
	mu    sync.Mutex
	reads map[string]int
}

func (s *countingStore) count(key string) {
	if strings.Contains(key, "/dead-letter-archive/sqs/") {
		s.mu.Lock()
		s.reads[key]++
		s.mu.Unlock()
	}
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.count(key)
	return s.Store.Get(ctx, key)
}

func (s *countingStore) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	s.count(key)
	return s.Store.GetInto(ctx, key, buf)
}

// A recover pass reads its lookback once: recover reads the keys triage
// read of the group it recovers, so an object of a group it does not
// recover is read once (by triage), and one it recovers once by triage and
// once by recover (twice more at most for the probe's sample), never
// listed and read again.
func TestARecoverPassReadsItsLookbackOnce(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	root := t.TempDir()
	local, byText := outageArchive(t, root, t0, 40)
	store := &countingStore{Store: local, reads: map[string]int{}}
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	r, err := Pass(ctx, Config{Store: store, Location: archive.Location{Dir: root, Stack: stack}, Layout: dla.Layout{Stack: stack},
		Mode: ModeRecover, DatabaseURL: dbURL, Offline: true, Concurrency: 4, NoAudit: true, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	if k := groupOf(t, r, knexText); k.Recovered == nil || k.Recovered.Written+k.Recovered.Dropped != len(byText[knexText]) {
		t.Fatalf("knex group: %+v", k.Recovered)
	}
	probed := 0
	for _, key := range byText[knexText] {
		switch n := store.reads[key]; {
		case n == 3:
			probed++
		case n != 2:
			t.Errorf("%s (recovered) read %d times, want 2 (3 when probed)", key, n)
		}
	}
	if probed > DefaultProbe {
		t.Errorf("%d recovered objects read 3 times, more than the probe's %d", probed, DefaultProbe)
	}
	for _, text := range []string{missingText, permanentText} {
		for _, key := range byText[text] {
			if n := store.reads[key]; n != 1 {
				t.Errorf("%s (not recovered) read %d times, want once", key, n)
			}
		}
	}
}

// An object that another run recovers between the pass's triage and its
// recover (gone from sqs/ when recover comes to read it) is no failure of
// the pass: it is not counted, not unreadable and not left, and the rest
// of the group is written.
func TestAnObjectGoneBetweenTriageAndRecoverIsNotCountedAFailure(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	root := t.TempDir()
	store, byText := outageArchive(t, root, t0, 20)
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	gone := byText[knexText][len(byText[knexText])-1]
	r, err := Pass(ctx, Config{Store: store, Location: archive.Location{Dir: root, Stack: stack}, Layout: dla.Layout{Stack: stack},
		Mode: ModeRecover, DatabaseURL: dbURL, Offline: true, NoAudit: true, Now: func() time.Time { return t0 },
		Stage: func(stage string) {
			if stage == "recover" {
				if err := store.Delete(ctx, gone); err != nil {
					t.Fatal(err)
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	k := groupOf(t, r, knexText).Recovered
	if k == nil || k.Written+k.Dropped != len(byText[knexText])-1 || k.Failed != 0 || k.Left != 0 || k.Selected != len(byText[knexText])-1 {
		t.Errorf("knex group: %+v, want %d selected and written, nothing failed or left", k, len(byText[knexText])-1)
	}
}

// The keys a pass holds from triage stop at MaxObjects a group (memory
// stays bounded on a lookback of a million objects), and a group larger
// than the budget still fills it.
func TestAPassHoldsAtMostMaxObjectsKeysAGroupAndStillFillsTheBudget(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	root := t.TempDir()
	store, byText := outageArchive(t, root, t0, 40)
	const budget = 10
	if len(byText[knexText]) <= budget {
		t.Fatalf("the knex group has %d objects, want more than %d", len(byText[knexText]), budget)
	}
	c := Config{Store: store, Location: archive.Location{Dir: root, Stack: stack}, Layout: dla.Layout{Stack: stack},
		Mode: ModeRecover, MaxObjects: budget, Offline: true, NoAudit: true, Now: func() time.Time { return t0 }}
	p := newPass(c)
	if err := p.triage(ctx); err != nil {
		t.Fatal(err)
	}
	g := GroupKey{Class: dla.ErrorClass(knexText)}
	if n := len(p.keys[g]); n != budget {
		t.Errorf("%d keys held for a group of %d, want %d", n, len(byText[knexText]), budget)
	}
	listed := slices.Sorted(slices.Values(byText[knexText]))
	for i, k := range p.keys[g] {
		if k != listed[i] {
			t.Fatalf("key %d held is %s, want %s: listing order", i, k, listed[i])
		}
	}

	c.DatabaseURL = testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	r, err := Pass(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if k := groupOf(t, r, knexText).Recovered; k == nil || k.Selected != budget || k.Written+k.Dropped != budget {
		t.Errorf("knex group: %+v, want %d selected and written", k, budget)
	}
	if r.Totals.Selected != budget {
		t.Errorf("%d selected in the pass, want the budget %d", r.Totals.Selected, budget)
	}
}
