package recovery

import (
	"context"
	"testing"
	"time"
)

// scopedDB is a dbFake that runs each granule in a scope, as the dry run's
// transaction does, and records which writes went through a scope.
type scopedDB struct {
	*dbFake
	scopes, scopedWrites int
}

// inScope is the DB a scope hands to the granule's writes.
type inScope struct{ *scopedDB }

func (s *scopedDB) GranuleScope(ctx context.Context, fn func(DB) error) error {
	s.scopes++
	return fn(inScope{s})
}

func (s inScope) WriteGranule(ctx context.Context, g *GranuleWrite) (GranuleResult, error) {
	s.scopedWrites++
	return s.dbFake.WriteGranule(ctx, g)
}

// Each granule's writes go through one scope of a DB that offers it (the
// dry run undoes them there), and the execution's do not.
func TestWriteScopesEachGranule(t *testing.T) {
	db := &scopedDB{dbFake: newDBFake()}
	two := replace(`"payload":{"granules":[{"granuleId":"G1",`, `"payload":{"granules":[{"granuleId":"G0"},{"granuleId":"G1",`)
	w := &Writer{DB: db, Now: func() time.Time { return testNow }}
	res, err := w.Write(context.Background(), message(two))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Granules) != 2 || db.scopes != 2 || db.scopedWrites != 2 || len(db.granules) != 2 || len(db.execRows) != 1 {
		t.Errorf("%d granules, %d scopes, %d writes in a scope, %d written, %d executions", len(res.Granules), db.scopes, db.scopedWrites, len(db.granules), len(db.execRows))
	}
}
