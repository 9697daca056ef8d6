package cumulusdb_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deadletter/deadletter/internal/cumulusdb"
)

// The schema-change line names the SQLSTATE, and the table only when the
// error names one: a trigger's error (no table) read "(SQLSTATE 23505 on )".
func TestSchemaChangedLineNamesATableOnlyWhenTheErrorHasOne(t *testing.T) {
	for _, c := range []struct {
		table, want string
	}{{"", "(SQLSTATE 23505)"}, {"granules", "(SQLSTATE 23505 on granules)"}} {
		e := &cumulusdb.SchemaChangedError{Changes: []string{"unique index granules.g1 (…) is new"}, Cause: &pgconn.PgError{Code: "23505", TableName: c.table}}
		if got := e.Error(); !strings.Contains(got, c.want) || strings.Contains(got, " on )") {
			t.Errorf("table %q: %s", c.table, got)
		}
	}
}

// A change outside the tables (a function, a domain) is never called the
// Cumulus schema's; one reached only by name says it may be unrelated
// and that a re-run goes on; one beside a change to the tables follows
// it. At most 8 changes are listed, whichever kind (issue 37).
func TestSchemaChangedLineSaysTheCumulusSchemaOnlyForTheTables(t *testing.T) {
	cause := &pgconn.PgError{Code: "P0001"}
	fn := "function helpers.check(text), which audit() names, was replaced"
	for _, c := range []struct {
		name     string
		e        *cumulusdb.SchemaChangedError
		want     []string
		wantNone []string
	}{
		{"outside, reached by name", &cumulusdb.SchemaChangedError{Elsewhere: []string{fn}, MayBeUnrelated: true, Cause: cause},
			[]string{"the database changed during the run outside the Cumulus tables", fn, "may be unrelated", "the re-run goes on"},
			[]string{"the Cumulus schema changed"}},
		{"outside, for certain", &cumulusdb.SchemaChangedError{Elsewhere: []string{"domain d, the type of granules.x, was …"}, Cause: cause},
			[]string{"the database changed during the run outside the Cumulus tables", "run again once the database is one dla writes"},
			[]string{"the Cumulus schema changed", "may be unrelated"}},
		{"both", &cumulusdb.SchemaChangedError{Changes: []string{"column files.a (text) is new"}, Elsewhere: []string{fn}, MayBeUnrelated: true, Cause: cause},
			[]string{"the Cumulus schema changed during the run: column files.a (text) is new; and outside its tables, in what the writes run: " + fn},
			[]string{"may be unrelated"}},
		{"ten", &cumulusdb.SchemaChangedError{Changes: make([]string, 6), Elsewhere: []string{"e1", "e2", "e3", "e4"}, Cause: cause},
			[]string{"e1; e2 and 2 more"}, []string{"e3"}},
	} {
		got := c.e.Error()
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: lacks %q: %s", c.name, w, got)
			}
		}
		for _, w := range c.wantNone {
			if strings.Contains(got, w) {
				t.Errorf("%s: says %q: %s", c.name, w, got)
			}
		}
	}
}
