package dlarecover

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestAChangeTheWriteCanReachOutsideTheTablesStopsTheRun (issue 37):
// two changes a neighbour makes mid-run outside the Cumulus tables that
// still reach the writes, each making every later write fail with an
// error that is the message's on an unchanged database:
//   - a PL/pgSQL function in another schema, called by a trigger
//     function on granules (a call pg_depend does not record), replaced
//     by one that raises (P0001);
//   - ALTER DOMAIN … ADD CONSTRAINT … NOT VALID on the domain of a
//     column granules' writes fill (23514, naming no table).
//   - the function of an operator a CHECK on granules uses (pg_depend
//     names the operator, not its function), replaced by one that
//     returns false (23514);
//   - a function a view selects, where a trigger function of granules
//     reads the view, replaced by one that raises (P0001);
//   - a function the default of a column calls, of a table a trigger
//     function of granules writes, replaced by one that raises (P0001).
//
// Each must stop the run with the objects in place, naming what changed
// without calling it the Cumulus schema.
func TestAChangeTheWriteCanReachOutsideTheTablesStopsTheRun(t *testing.T) {
	baseRoot := t.TempDir()
	generateInto(t, baseRoot)
	baseURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	if _, err := schemaRun(t, baseURL, baseRoot, 8, nil); err != nil {
		t.Fatalf("unchanged run: %v", err)
	}
	baseLeft := archiveKeys(baseRoot)

	for _, c := range []struct {
		name   string
		before []string
		change []string
		names  string
	}{
		{"a PL/pgSQL callee in another schema replaced by one that raises",
			[]string{`CREATE SCHEMA helpers`,
				`CREATE FUNCTION helpers.check_granule(g text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN END $$`,
				`CREATE FUNCTION granules_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM helpers.check_granule(NEW.granule_id); RETURN NEW; END $$`,
				`CREATE TRIGGER granules_audit BEFORE INSERT OR UPDATE ON granules FOR EACH ROW EXECUTE FUNCTION granules_audit()`},
			[]string{`CREATE OR REPLACE FUNCTION helpers.check_granule(g text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused %', g; END $$`},
			"function helpers.check_granule(text)"},
		{"a NOT VALID constraint added to a written column's domain",
			[]string{`CREATE SCHEMA types`, `CREATE DOMAIN types.producer_id AS text`,
				`ALTER TABLE granules ALTER COLUMN producer_granule_id TYPE types.producer_id`},
			[]string{`ALTER DOMAIN types.producer_id ADD CONSTRAINT not_yet CHECK (VALUE = '') NOT VALID`},
			"domain types.producer_id"},
		{"the function of an operator a CHECK on granules uses, replaced by one that refuses",
			[]string{`CREATE SCHEMA helpers`,
				`CREATE FUNCTION helpers.okf(a text, b text) RETURNS bool LANGUAGE sql IMMUTABLE AS $$ SELECT true $$`,
				`CREATE OPERATOR helpers.<~> (LEFTARG = text, RIGHTARG = text, FUNCTION = helpers.okf)`,
				`ALTER TABLE granules ADD CONSTRAINT g_op CHECK (granule_id OPERATOR(helpers.<~>) '')`},
			[]string{`CREATE OR REPLACE FUNCTION helpers.okf(a text, b text) RETURNS bool LANGUAGE sql IMMUTABLE AS $$ SELECT false $$`},
			"function helpers.okf(text,text), called by constraint granules.g_op,"},
		{"a function a view selects, the view read by a trigger function, replaced by one that raises",
			[]string{`CREATE SCHEMA helpers`,
				`CREATE FUNCTION helpers.chk() RETURNS bool LANGUAGE plpgsql AS $$ BEGIN RETURN true; END $$`,
				`CREATE VIEW helpers.v AS SELECT helpers.chk() AS ok`,
				`CREATE FUNCTION granules_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM 1 FROM helpers.v; RETURN NEW; END $$`,
				`CREATE TRIGGER granules_audit BEFORE INSERT OR UPDATE ON granules FOR EACH ROW EXECUTE FUNCTION granules_audit()`},
			[]string{`CREATE OR REPLACE FUNCTION helpers.chk() RETURNS bool LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'nope'; END $$`},
			"function helpers.chk(), called by view helpers.v, a view granules_audit() names,"},
		{"a function the default of a table a trigger function writes calls, replaced by one that raises",
			[]string{`CREATE SCHEMA helpers`,
				`CREATE FUNCTION helpers.stamp() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$`,
				`CREATE TABLE helpers.log (g text, s int DEFAULT helpers.stamp())`,
				`CREATE FUNCTION granules_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO helpers.log (g) VALUES (NEW.granule_id); RETURN NEW; END $$`,
				`CREATE TRIGGER granules_audit BEFORE INSERT OR UPDATE ON granules FOR EACH ROW EXECUTE FUNCTION granules_audit()`},
			[]string{`CREATE OR REPLACE FUNCTION helpers.stamp() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'nope'; END $$`},
			"function helpers.stamp(), called by the default of helpers.log.s, a table granules_audit() names,"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			generateInto(t, root)
			dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
			testsupport.ExecSQL(t, dbURL, c.before...)
			_, err := schemaRun(t, dbURL, root, 8, func(n int) {
				if n == 12 {
					// On the run's emitting goroutine: reported, never
					// t.Fatal.
					if err := testsupport.ExecSQLErr(dbURL, c.change...); err != nil {
						t.Errorf("the change: %v", err)
					}
				}
			})
			var stopped *StoppedError
			if !errors.As(err, &stopped) {
				t.Fatalf("the run did not stop on a change the write reaches: %v", err)
			}
			if !strings.Contains(err.Error(), c.names) || strings.Contains(err.Error(), "the Cumulus schema changed") {
				t.Errorf("the stop does not name %s, or calls it the Cumulus schema: %v", c.names, err)
			} else {
				t.Log(err)
			}
			moved := len(movedToFailed(root, baseLeft))
			if moved > 0 {
				t.Errorf("%d objects moved to failed-sqs/ for a change the write reaches; the unchanged run leaves them elsewhere", moved)
			}
		})
	}
}

// TestAnUnrelatedFunctionCreatedMidRunChangesNothing (issue 37): a
// function nobody calls, created mid-run beside a trigger function of
// granules (which refuses some granules), is not the write's: the run
// goes on through the messages' own errors after it and ends as a run that never met it, with the same
// archive and the same rows.
func TestAnUnrelatedFunctionCreatedMidRunChangesNothing(t *testing.T) {
	// The trigger refuses some granules: a message's own error (P0001),
	// the kind that made the old code compare the schema and stop.
	before := []string{`CREATE FUNCTION granules_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
  IF NEW.granule_id LIKE '%7' THEN RAISE EXCEPTION 'granule % refused', NEW.granule_id; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER granules_audit BEFORE INSERT OR UPDATE ON granules FOR EACH ROW EXECUTE FUNCTION granules_audit()`}
	baseRoot := t.TempDir()
	generateInto(t, baseRoot)
	baseURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	testsupport.ExecSQL(t, baseURL, before...)
	baseStart := time.Now().Add(-time.Second)
	if _, err := schemaRun(t, baseURL, baseRoot, 8, nil); err != nil {
		t.Fatalf("unchanged run: %v", err)
	}
	baseTables := testsupport.DumpTables(t, baseURL, baseStart)
	baseLeft := archiveKeys(baseRoot)
	failedAfter := 0
	for _, k := range baseLeft {
		if strings.Contains(k, "/failed-sqs/") {
			failedAfter++
		}
	}
	if failedAfter == 0 {
		t.Fatal("the archive has no message that fails on its own: the test would not show a run going on past one")
	}

	root := t.TempDir()
	generateInto(t, root)
	dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
	testsupport.ExecSQL(t, dbURL, before...)
	start := time.Now().Add(-time.Second)
	_, err := schemaRun(t, dbURL, root, 8, func(n int) {
		if n == 2 {
			if err := testsupport.ExecSQLErr(dbURL, `CREATE FUNCTION public.unrelated() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$`); err != nil {
				t.Errorf("the change: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatalf("a function nobody calls, created mid-run, stopped the run: %v", err)
	}
	if left := archiveKeys(root); !reflect.DeepEqual(left, baseLeft) {
		t.Errorf("the archive differs from the unchanged run's:\n%v\nwant\n%v", left, baseLeft)
	}
	checkTablesAsUnchanged(t, dbURL, start, baseTables, "")
}
