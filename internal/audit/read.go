package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
)

// Run is one run's record as read back.
type Run struct {
	Started
	// Finished is nil for a run that did not finish (killed, or still
	// going).
	Finished *Finished
	// Folder is the record's key prefix.
	Folder string
	// Chunks are the keys of the items' chunks, in order.
	Chunks []string
	// Items are filled by LoadItems.
	Items []Item
	// Problem names what of the record could not be read (a chunk, the
	// finished record), when something could not.
	Problem string
}

// Filter selects runs. Zero fields select everything.
type Filter struct {
	From, To time.Time // by started_at, To exclusive
	Tool     string
	Verbs    []string
	// Actor matches the AWS ARN, the OS user or the host, in part.
	Actor string
	// NameForeign names each folder under base not named like a day
	// among the problems: base is the tool's own (dla's audit/ folder),
	// so that one is damage, not another's data.
	NameForeign bool
}

func (f Filter) dateIn(day string) bool {
	d, err := time.Parse("2006-01-02", day)
	if err != nil {
		return false
	}
	if !f.From.IsZero() && d.Add(24*time.Hour).Before(f.From.UTC()) {
		return false
	}
	if !f.To.IsZero() && !d.Before(f.To.UTC()) {
		return false
	}
	return true
}

func (f Filter) match(s Started) bool {
	if !f.From.IsZero() && s.StartedAt.Before(f.From) {
		return false
	}
	if !f.To.IsZero() && !s.StartedAt.Before(f.To) {
		return false
	}
	if f.Tool != "" && s.Tool != f.Tool {
		return false
	}
	if len(f.Verbs) > 0 {
		ok := false
		for _, v := range f.Verbs {
			if v == s.Verb || strings.HasPrefix(s.Verb, v+" ") {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	if f.Actor != "" {
		a := strings.ToLower(f.Actor)
		hay := []string{s.Actor.OSUser, s.Actor.Host, s.Actor.OSUser + "@" + s.Actor.Host}
		if s.Actor.AWSARN != nil {
			hay = append(hay, *s.Actor.AWSARN)
		}
		ok := false
		for _, h := range hay {
			if strings.Contains(strings.ToLower(h), a) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// List reads the runs recorded under base that f selects, newest first.
// A folder whose started record cannot be read (and, with NameForeign, a
// folder not named like a day) is skipped with its problem named in
// problems (a partial record is still shown).
func List(ctx context.Context, store archive.Store, base string, f Filter) (runs []Run, problems []string, err error) {
	var days []string
	err = store.List(ctx, base, true, func(e archive.Entry) error {
		if e.IsPrefix {
			day := strings.TrimSuffix(strings.TrimPrefix(e.Key, base), "/")
			if _, err := time.Parse("2006-01-02", day); err != nil {
				if f.NameForeign {
					problems = append(problems, fmt.Sprintf("%s: not a day's folder (YYYY-MM-DD): not read", e.Key))
				}
				return nil
			}
			if f.dateIn(day) {
				days = append(days, day)
			}
		}
		return nil
	})
	if errors.Is(err, archive.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	sort.Sort(sort.Reverse(sort.StringSlice(days)))
	for _, day := range days {
		folders := map[string][]string{}
		var order []string
		err := store.List(ctx, base+day+"/", false, func(e archive.Entry) error {
			rest := strings.TrimPrefix(e.Key, base+day+"/")
			id, name, ok := strings.Cut(rest, "/")
			if !ok {
				return nil
			}
			if _, seen := folders[id]; !seen {
				order = append(order, id)
			}
			folders[id] = append(folders[id], name)
			return nil
		})
		if err != nil {
			return runs, problems, err
		}
		dayRuns := make([]Run, len(order))
		keep := make([]bool, len(order))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		var pmu sync.Mutex
		for i, id := range order {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				run, perr := readRun(ctx, store, base+day+"/"+id+"/", folders[id])
				if perr != nil {
					pmu.Lock()
					problems = append(problems, perr.Error())
					pmu.Unlock()
					return
				}
				if f.match(run.Started) {
					dayRuns[i], keep[i] = run, true
				}
			}()
		}
		wg.Wait()
		for i := range dayRuns {
			if keep[i] {
				runs = append(runs, dayRuns[i])
			}
		}
		if err := ctx.Err(); err != nil {
			return runs, problems, err
		}
	}
	sort.Strings(problems) // the runs are read at once: one order every time
	sort.SliceStable(runs, func(i, j int) bool {
		if !runs[i].StartedAt.Equal(runs[j].StartedAt) {
			return runs[i].StartedAt.After(runs[j].StartedAt)
		}
		return runs[i].RunID > runs[j].RunID
	})
	return runs, problems, nil
}

func readRun(ctx context.Context, store archive.Store, folder string, names []string) (Run, error) {
	run := Run{Folder: folder}
	body, err := store.Get(ctx, folder+"started.json")
	if err != nil {
		return run, fmt.Errorf("%s: no started record readable: %v", folder, err)
	}
	if err := json.Unmarshal(body, &run.Started); err != nil {
		return run, fmt.Errorf("%sstarted.json: not a started record: %v", folder, err)
	}
	if run.Schema != Schema {
		return run, fmt.Errorf("%sstarted.json: schema %q, not %s", folder, run.Schema, Schema)
	}
	sort.Strings(names)
	for _, n := range names {
		switch {
		case n == "finished.json":
			b, err := store.Get(ctx, folder+n)
			if err != nil {
				run.Problem = fmt.Sprintf("finished.json unreadable: %v", err)
				continue
			}
			var f Finished
			if err := json.Unmarshal(b, &f); err != nil {
				run.Problem = fmt.Sprintf("finished.json: %v", err)
				continue
			}
			run.Finished = &f
		case strings.HasPrefix(n, "items-") && strings.HasSuffix(n, ".ndjson"):
			run.Chunks = append(run.Chunks, folder+n)
		}
	}
	return run, nil
}

// LoadItems reads the run's items from its chunks. A line that is not an
// item (a chunk cut short), a line too long to be one and a chunk that
// cannot be read (over the store's 64 MiB) are skipped and named in
// Problem, and the other chunks read: one damaged chunk hides only its own
// items. Its error is the context's.
func (r *Run) LoadItems(ctx context.Context, store archive.Store) error {
	r.Items = r.Items[:0]
	for _, key := range r.Chunks {
		b, err := store.Get(ctx, key)
		if err != nil {
			if errors.Is(err, archive.ErrNotFound) {
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.Problem = fmt.Sprintf("%s: not read: %v", key, err)
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var it Item
			if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
				r.Problem = fmt.Sprintf("%s: a line that is not an item: %v", key, err)
				continue
			}
			r.Items = append(r.Items, it)
		}
		if err := sc.Err(); err != nil {
			r.Problem = fmt.Sprintf("%s: the rest of the chunk not read: %v", key, err)
		}
	}
	return nil
}

// Counts is the run's counts: the finished record's, else (a run that did
// not finish) the items' actions tallied.
func (r *Run) Counts() map[string]int {
	if r.Finished != nil && r.Finished.Counts != nil {
		return r.Finished.Counts
	}
	c := map[string]int{}
	for _, it := range r.Items {
		c[it.Action]++
	}
	return c
}
