package dlarecover

import (
	"errors"
	"testing"

	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// TestEnvironmentFaultsOutsideTheFingerprintDoNotBlameMessages: changes a
// neighbour makes to the database mid-run that the schema fingerprint and
// its stamp do not see, each making every later write fail with a class-22
// or class-23 SQLSTATE that no message caused:
//   - a unique index created with CREATE UNIQUE INDEX (an index, not a
//     constraint: pg_index, not pg_constraint);
//   - the granules sequence reaching its MAXVALUE (2200H), as an int4
//     serial running out would (22003);
//   - a function in another schema, called by an existing CHECK
//     constraint, replaced (the constraint's definition is unchanged).
//
// Each is the environment's: the run must stop with the objects in place
// and move nothing to failed-sqs/ that an unchanged run would not.
func TestEnvironmentFaultsOutsideTheFingerprintDoNotBlameMessages(t *testing.T) {
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
	}{
		{"a unique index created mid-run", nil,
			[]string{`DO $$ DECLARE m bigint; BEGIN LOCK TABLE granules IN SHARE MODE; SELECT coalesce(max(cumulus_id), 0) INTO m FROM granules;
EXECUTE format('CREATE UNIQUE INDEX granules_new_per_collection ON granules (collection_cumulus_id) WHERE cumulus_id > %s', m); END $$`}},
		{"the granules sequence runs out", nil,
			// The run's workers draw from the sequence while this runs
			// (nextval is not transactional), so the value read can be
			// passed before the ALTER lands: read again and retry.
			[]string{`DO $$ DECLARE m bigint; BEGIN LOOP BEGIN SELECT last_value + 2 INTO m FROM granules_cumulus_id_seq;
EXECUTE format('ALTER SEQUENCE granules_cumulus_id_seq MAXVALUE %s', m); EXIT;
EXCEPTION WHEN invalid_parameter_value THEN NULL; END; END LOOP; END $$`}},
		{"a function another schema holds, called by a CHECK, replaced",
			[]string{`CREATE SCHEMA hostile`, `CREATE FUNCTION hostile.ok(t text) RETURNS bool LANGUAGE sql IMMUTABLE AS $$ SELECT true $$`,
				`ALTER TABLE granules ADD CONSTRAINT granules_ok CHECK (hostile.ok(granule_id))`},
			[]string{`CREATE OR REPLACE FUNCTION hostile.ok(t text) RETURNS bool LANGUAGE sql IMMUTABLE AS $$ SELECT false $$`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			generateInto(t, root)
			dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
			if len(c.before) > 0 {
				testsupport.ExecSQL(t, dbURL, c.before...)
			}
			_, err := schemaRun(t, dbURL, root, 8, func(n int) {
				if n == 12 {
					// On the run's emitting goroutine: an error is
					// reported, never t.Fatal (which would end that
					// goroutine and leave the run waiting for it).
					if err := testsupport.ExecSQLErr(dbURL, c.change...); err != nil {
						t.Errorf("the change: %v", err)
					}
				}
			})
			var stopped *StoppedError
			if !errors.As(err, &stopped) {
				t.Errorf("the run did not stop on the environment's fault: %v", err)
			}
			moved := len(movedToFailed(root, baseLeft))
			if moved > 0 {
				t.Errorf("%d objects moved to failed-sqs/ for the environment's fault; the unchanged run leaves them elsewhere", moved)
			}
		})
	}
}
