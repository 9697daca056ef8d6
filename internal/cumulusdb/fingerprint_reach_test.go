package cumulusdb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// refuseG1 is a trigger on granules that refuses granule G1: the
// message's own error (P0001), which makes a run compare the schema with
// the one it started on. body runs first.
func refuseG1(body string) string {
	return `CREATE FUNCTION granules_audit() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN ` + body + `
  IF NEW.granule_id = 'G1' THEN RAISE EXCEPTION 'granule % refused', NEW.granule_id; END IF; RETURN NEW; END $f$;
CREATE TRIGGER granules_audit BEFORE INSERT OR UPDATE ON granules FOR EACH ROW EXECUTE FUNCTION granules_audit()`
}

// What the writes reach beyond the tables (issue 37): a change there,
// made mid-run, stops the run with the object in place (a TransientError
// naming it, never as "the Cumulus schema"), and a change nothing the
// writes run reaches leaves a message's own error the message's:
//   - a domain a written column's domain is built on, given a NOT VALID
//     constraint; a function a domain's CHECK calls, replaced;
//   - a function of a trigger on a table that a trigger function of
//     granules writes (an audit table), replaced by one that raises;
//   - the function of an operator a CHECK on granules uses (pg_depend
//     names the operator, not its function), replaced;
//   - a function a view selects, read through another view by a trigger
//     function of granules, replaced;
//   - a function the default of that audit table calls, replaced, or set
//     as its default mid-run;
//   - beside a trigger function that runs dynamic SQL (EXECUTE), whose
//     callees cannot be read, any new function: a stop that says it may
//     be unrelated and that a re-run goes on;
//   - without dynamic SQL, a new function nobody names: no stop.
func TestWhatTheWritesReachOutsideTheTablesIsInTheFingerprint(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, before, change string
		stops                bool
		names                []string
	}{
		{"a constraint on the domain a column's domain is built on",
			`CREATE SCHEMA types; CREATE DOMAIN types.id AS text; CREATE DOMAIN types.producer_id AS types.id;
ALTER TABLE granules ALTER COLUMN producer_granule_id TYPE types.producer_id`,
			// (A generic plan, v22's plan_cache_mode, checks a domain by
			// the constraints its base domain had when it was planned
			// until the domain itself is altered: PostgreSQL's caching,
			// not the check this test is about. The outer domain is
			// touched, changing nothing the fingerprint shows of it.)
			`ALTER DOMAIN types.id ADD CONSTRAINT not_yet CHECK (VALUE = '') NOT VALID; ALTER DOMAIN types.producer_id DROP DEFAULT`, true,
			[]string{"domain types.id, the type of granules.producer_granule_id,", "NOT VALID", "SQLSTATE 23514"}},
		{"a function a domain's CHECK calls, replaced",
			`CREATE SCHEMA types; CREATE FUNCTION types.ok(v text) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN RETURN true; END $f$;
CREATE DOMAIN types.producer_id AS text CHECK (types.ok(VALUE));
ALTER TABLE granules ALTER COLUMN producer_granule_id TYPE types.producer_id`,
			`CREATE OR REPLACE FUNCTION types.ok(v text) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $f$ BEGIN RETURN false; END $f$`, true,
			[]string{"function types.ok(text), called by constraint producer_id_check of domain types.producer_id, was replaced"}},
		{"the trigger function of an audit table a trigger writes, replaced",
			`CREATE SCHEMA audit; CREATE TABLE audit.log (granule_id text);
CREATE FUNCTION audit.check_log() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$;
CREATE TRIGGER check_log BEFORE INSERT ON audit.log FOR EACH ROW EXECUTE FUNCTION audit.check_log();
` + refuseG1(`INSERT INTO audit.log VALUES (NEW.granule_id);`),
			`CREATE OR REPLACE FUNCTION audit.check_log() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'no'; END $f$`, true,
			[]string{"function audit.check_log(), the function of trigger audit.log.check_log, a table granules_audit() names, was replaced"}},
		{"the function of an operator a CHECK uses, replaced",
			`CREATE SCHEMA helpers; CREATE FUNCTION helpers.okf(a text, b text) RETURNS bool LANGUAGE sql IMMUTABLE AS $f$ SELECT true $f$;
CREATE OPERATOR helpers.<~> (LEFTARG = text, RIGHTARG = text, FUNCTION = helpers.okf);
ALTER TABLE granules ADD CONSTRAINT g_op CHECK (granule_id OPERATOR(helpers.<~>) '')`,
			`CREATE OR REPLACE FUNCTION helpers.okf(a text, b text) RETURNS bool LANGUAGE sql IMMUTABLE AS $f$ SELECT false $f$`, true,
			[]string{"function helpers.okf(text,text), called by constraint granules.g_op, was replaced", "SQLSTATE 23514"}},
		{"a function a view selects, the view read by a trigger function, replaced",
			`CREATE SCHEMA helpers; CREATE FUNCTION helpers.chk() RETURNS bool LANGUAGE plpgsql AS $f$ BEGIN RETURN true; END $f$;
CREATE VIEW helpers.inner_v AS SELECT helpers.chk() AS ok; CREATE VIEW helpers.v AS SELECT ok FROM helpers.inner_v;
` + refuseG1(`PERFORM 1 FROM helpers.v;`),
			`CREATE OR REPLACE FUNCTION helpers.chk() RETURNS bool LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'no'; END $f$`, true,
			[]string{"function helpers.chk(), called by view helpers.inner_v, which view helpers.v reads, a view granules_audit() names, was replaced"}},
		{"a function the default of a table a trigger writes calls, replaced",
			`CREATE SCHEMA helpers; CREATE FUNCTION helpers.stamp() RETURNS int LANGUAGE plpgsql AS $f$ BEGIN RETURN 1; END $f$;
CREATE TABLE helpers.log (g text, s int DEFAULT helpers.stamp());
` + refuseG1(`INSERT INTO helpers.log (g) VALUES (NEW.granule_id);`),
			`CREATE OR REPLACE FUNCTION helpers.stamp() RETURNS int LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'no'; END $f$`, true,
			[]string{"function helpers.stamp(), called by the default of helpers.log.s, a table granules_audit() names, was replaced"}},
		{"a default set mid-run, on a table a trigger writes, to a function that raises",
			`CREATE SCHEMA helpers; CREATE FUNCTION helpers.refuse() RETURNS int LANGUAGE plpgsql AS $f$ BEGIN RAISE EXCEPTION 'no'; END $f$;
CREATE TABLE helpers.log (g text, s int);
` + refuseG1(`INSERT INTO helpers.log (g) VALUES (NEW.granule_id);`),
			`ALTER TABLE helpers.log ALTER COLUMN s SET DEFAULT helpers.refuse()`, true,
			[]string{"function helpers.refuse(), called by the default of helpers.log.s, a table granules_audit() names,", "is new"}},
		{"a new function beside a trigger function running dynamic SQL",
			refuseG1(`EXECUTE 'SELECT 1';`),
			`CREATE FUNCTION public.unrelated() RETURNS int LANGUAGE sql AS $f$ SELECT 1 $f$`, true,
			[]string{"function unrelated(), not seen called, but granules_audit() runs SQL dla cannot read", "is new", "may be unrelated", "the re-run goes on"}},
		{"a new function nobody names",
			refuseG1(``),
			`CREATE FUNCTION public.unrelated() RETURNS int LANGUAGE sql AS $f$ SELECT 1 $f$`, false,
			[]string{"granule G1 refused (SQLSTATE P0001)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dbURL := testsupport.NewCumulusDatabase(t, []byte(writersSeed))
			testsupport.ExecSQL(t, dbURL, c.before)
			db, w := openDB(t, dbURL)
			// A granule the schema takes, then the change.
			write(t, w, message("e0", "completed", feb2024, "", granule("G0", file("b", "k0", 1))))
			if _, err := db.Pool.Exec(ctx, c.change); err != nil {
				t.Fatal(err)
			}
			res, err := w.Write(ctx, message("e1", "completed", feb2024, "", granule("G1", file("b", "k1", 1))))
			if err == nil {
				t.Fatalf("the write of G1 succeeded: %+v", res)
			}
			if recovery.IsTransient(err) != c.stops {
				t.Fatalf("stopped the run: %v, want %v: %v", recovery.IsTransient(err), c.stops, err)
			}
			for _, want := range c.names {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error lacks %q: %v", want, err)
				}
			}
			if strings.Contains(err.Error(), "the Cumulus schema changed") {
				t.Errorf("a change outside the tables is called the Cumulus schema's: %v", err)
			}
			if n := queryString(t, db.Pool, `SELECT count(*)::text FROM granules WHERE granule_id = 'G1'`); c.stops && n != "0" {
				t.Errorf("G1 written (%s rows) on a stop", n)
			}
		})
	}
}
