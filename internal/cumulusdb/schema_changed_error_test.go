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
