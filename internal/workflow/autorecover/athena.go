package autorecover

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/deadletter/deadletter/internal/athenarun"
	"github.com/deadletter/deadletter/internal/athenasql"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/triage"
)

// Engines: who counts the lookback.
const (
	EngineLocal  = "local"  // every object of the lookback read (dla triage --engine local)
	EngineAthena = "athena" // one query over the stack's Glue table (dla triage --engine athena)
)

// Athena is a pass's Athena engine. Triage counts the lookback with one
// GROUP BY query over the stack's Glue table, as dla triage --engine
// athena does, instead of reading every object; recover then finds the
// keys of the groups it recovers with a second query, and reads only
// those. A pass over a lookback of a million objects stays inside a
// Lambda's 15 minutes.
type Athena struct {
	Runner *athenarun.Runner // its Workgroup and Database set
	Names  athenasql.Names
}

// AthenaQuery is a query a pass ran, in its report.
type AthenaQuery struct {
	Purpose      string  `json:"purpose"` // "triage" or "keys"
	ID           string  `json:"id"`
	ScannedBytes int64   `json:"scanned_bytes"`
	CostUSD      float64 `json:"cost_usd"` // Athena's 5 USD a TB, 10 MB at least
}

func (p *pass) query(purpose string, st athenarun.Status) {
	if st.ID != "" {
		p.rep.Queries = append(p.rep.Queries, AthenaQuery{Purpose: purpose, ID: st.ID, ScannedBytes: st.Scanned, CostUSD: st.Cost()})
	}
}

// triageAthena is triage with Athena: the lookback's objects grouped by
// error text, collection, provider and date in the query, and classified
// here. Nothing is read from the archive; the error texts of each group
// are kept for the query of keys. What only the messages hold (an
// UnmetRequirementsError's async operation and parent execution) is not
// in the Glue table, and objects that cannot be decoded are not in it
// either: they are not counted.
func (p *pass) triageAthena(ctx context.Context) error {
	sql, err := athenasql.Triage(athenasql.Query{From: p.rep.From, To: p.rep.To}, p.c.Athena.Names)
	if err != nil {
		return err
	}
	prefix := p.c.Layout.AreaPrefix(dla.AreaSQS)
	p.texts = map[GroupKey]map[string]bool{}
	st, err := p.c.Athena.Runner.Run(ctx, sql, func(row []*string) error {
		tr, err := athenasql.ParseTriageRow(row)
		if err != nil {
			return err
		}
		key, err := athenasql.KeyFromPath(p.c.Location.Bucket, prefix, tr.Path)
		if err != nil {
			return err
		}
		p.tri.AddCounted(triage.Counted{Key: key, Date: tr.Date, Error: tr.Error, Collection: tr.Collection, Provider: tr.Provider, N: tr.N})
		g := GroupKey{Class: dla.ErrorClass(tr.Error)}
		if p.texts[g] == nil {
			p.texts[g] = map[string]bool{}
		}
		p.texts[g][tr.Error] = true
		return nil
	})
	p.query("triage", st)
	if err != nil {
		return fmt.Errorf("triage of %s with Athena, %s..%s: %w", p.c.Location, p.rep.From, p.rep.To, err)
	}
	return nil
}

// errEnough ends the reading of a query's rows: every group has its keys.
var errEnough = errors.New("enough keys")

// athenaKeys finds, with one query, the keys of the groups recover will
// recover (those whose probe writes): the objects of their dates whose
// error text is one triage counted in them, in listing order, less those
// tried MaxAttempts times, at most MaxObjects a group. It stops reading
// rows once the keys found give recover all it will take (the groups
// before, in recover's order, complete, and the budget filled), so an
// object over its tries is counted among the rows read.
func (p *pass) athenaKeys(ctx context.Context) error {
	want := map[GroupKey]bool{}
	need := map[GroupKey]int{} // the keys that make a group full
	var order []GroupKey       // recover's order
	var texts []string
	from, to := "", ""
	for i := range p.choices {
		c := &p.choices[i]
		if pr := p.rep.Groups[i].Probe; pr == nil || pr.Outcome != ProbeWrites || want[c.Key] {
			continue
		}
		want[c.Key] = true
		need[c.Key] = min(p.c.MaxObjects, c.Group.Count)
		order = append(order, c.Key)
		for t := range p.texts[c.Key] {
			texts = append(texts, t)
		}
		if from == "" || c.Group.FirstDate < from {
			from = c.Group.FirstDate
		}
		to = max(to, c.Group.LastDate)
	}
	if len(want) == 0 {
		return nil
	}
	slices.Sort(texts) // the same query for the same groups
	sql, err := athenasql.Keys(athenasql.Query{From: from, To: to}, p.c.Athena.Names, texts)
	if err != nil {
		return err
	}
	prefix := p.c.Layout.AreaPrefix(dla.AreaSQS)
	// enough: the keys found already give recover all it will take. In
	// recover's order, each group is full (MaxObjects keys, or every
	// object triage counted in it met), until one whose keys fill what
	// is left of the pass's budget.
	enough := func() bool {
		left := p.c.MaxObjects
		for _, g := range order {
			if len(p.keys[g]) >= left {
				return true
			}
			if len(p.keys[g])+p.over[g] < need[g] {
				return false
			}
			left -= len(p.keys[g])
		}
		return true
	}
	for g := range want {
		p.keys[g] = []string{}
	}
	st, err := p.c.Athena.Runner.Run(ctx, sql, func(row []*string) error {
		if len(row) != len(athenasql.KeysColumns) || row[0] == nil {
			return fmt.Errorf("Athena returned a row of keys of %d columns", len(row))
		}
		key, err := athenasql.KeyFromPath(p.c.Location.Bucket, prefix, *row[0])
		if err != nil {
			return err
		}
		text := ""
		if row[2] != nil {
			text = *row[2]
		}
		g := GroupKey{Class: dla.ErrorClass(text)}
		if !want[g] {
			return nil // another group's text, when the query could not list them all
		}
		switch ks := p.keys[g]; {
		case p.overAttempts(key):
			p.over[g]++
		case len(ks) < p.c.MaxObjects:
			p.keys[g] = append(ks, key)
		}
		if enough() {
			return errEnough
		}
		return nil
	})
	p.query("keys", st)
	if err != nil && !errors.Is(err, errEnough) {
		return fmt.Errorf("the keys of the groups to recover, with Athena, %s..%s: %w", from, to, err)
	}
	return nil
}
