package cumulusdb

import (
	"fmt"
	"strings"
)

// The statements of Cumulus v22's writes (partitioned executions, granules
// and files; global uniqueness kept by guard tables and their triggers).
// v22 never uses ON CONFLICT on those tables: its models insert in a
// savepoint and, on a unique violation, update by the natural key
// (packages/db/src/models/{execution,granule,file}.ts; see
// docs/recover.md, "Cumulus releases"). Here too a write is first a plain
// insert (the *InsertSQL statements at the end); when it meets a row (a
// unique violation, in the table or a guard table) the full statement
// runs, which is that write as one statement, updating first: an existing
// row takes the update, a new one the insert, and an insert that races
// another writer's gets the unique violation that DB.one retries, when the
// update then finds the row. What a write leaves is v22's; the references
// carry the partition keys (created_at of an execution, collection of a
// granule), read in the same statement from the row referenced.

// v22ExecutionCreatedAt is the created_at of the execution whose
// cumulus_id is the parameter p (its partition key, which every reference
// to it carries). The row is locked against a change of its keys until the
// statement's transaction ends: another writer that moves the execution to
// another partition (a new created_at) then waits for the reference to be
// written and follows it (ON UPDATE CASCADE), or, if it moved the row
// first, this statement fails with 40001 and is retried (DB.one) on the
// row where it is now, instead of failing the message with a foreign key
// violation on the created_at it read before the move.
func v22ExecutionCreatedAt(p string) string {
	return `(SELECT x.created_at FROM executions x WHERE x.cumulus_id = ` + p + ` FOR KEY SHARE)`
}

// v22ExecutionSQL is ExecutionPgModel.upsert: a running execution updates
// only created_at, updated_at, timestamp and original_payload; any other
// status every column supplied. No status guard (v22 has none): a late
// "running" leaves the status alone because it does not set it. A new
// created_at moves the row to that quarter's partition. returning is what
// the statement selects from the written row, aliased up.
func v22ExecutionSQL(running bool, returning string) string {
	var set string
	if running {
		set = `created_at = $7, updated_at = $9, "timestamp" = $8, original_payload = $11::jsonb`
	} else {
		cols := strings.Split(strings.ReplaceAll(executionCols, "\n", ""), ",")
		params := []string{"$1", "$2", "$3", "$4", "$5::jsonb", "$6", "$7", "$8", "$9", "$10::jsonb", "$11::jsonb", "$12::jsonb", "$13", "$14", "$15", "$16"}
		parts := make([]string, 0, len(cols)+1)
		for i, c := range cols {
			c = strings.TrimSpace(c)
			parts = append(parts, fmt.Sprintf("%s = COALESCE(%s, e.%s)", c, params[i], c))
		}
		parts = append(parts, `parent_created_at = CASE WHEN $16::bigint IS NULL THEN e.parent_created_at ELSE `+v22ExecutionCreatedAt("$16::bigint")+` END`)
		set = strings.Join(parts, ", ")
	}
	return `WITH upd AS (
  UPDATE executions AS e SET ` + set + `
  WHERE e.arn = $1
  RETURNING e.*
), ` + v22NewID("executions", "NOT EXISTS (SELECT 1 FROM upd)") + `, ins AS (
  INSERT INTO executions (cumulus_id, ` + executionCols + `, parent_created_at) OVERRIDING SYSTEM VALUE
  SELECT nid.v, $1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10::jsonb, $11::jsonb, $12::jsonb, $13, $14, $15, $16::bigint, ` + v22ExecutionCreatedAt("$16::bigint") + `
  FROM nid WHERE NOT EXISTS (SELECT 1 FROM taken)
  RETURNING *
)
SELECT ` + v22ExecutionResult(returning, "upd", "ins")
}

// v22PdrSQL is v21's PDR upsert (pdrs is not partitioned and keeps its
// unique name) with the execution's created_at beside its id.
func v22PdrSQL(running bool) string {
	sql := strings.Replace(pdrInsert, `execution_cumulus_id,
  collection_cumulus_id`, `execution_cumulus_id, execution_created_at,
  collection_cumulus_id`, 1)
	sql = strings.Replace(sql, `VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, $11, $12, $13)`,
		`VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::bigint, `+v22ExecutionCreatedAt("$7::bigint")+`, $8, $9, $10, $11, $12, $13)`, 1)
	sql = strings.Replace(sql, `execution_cumulus_id = COALESCE(EXCLUDED.execution_cumulus_id, p.execution_cumulus_id),`,
		`execution_cumulus_id = COALESCE(EXCLUDED.execution_cumulus_id, p.execution_cumulus_id),
  execution_created_at = CASE WHEN EXCLUDED.execution_cumulus_id IS NULL THEN p.execution_created_at ELSE EXCLUDED.execution_created_at END,`, 1)
	if running {
		sql += `
  AND (p.execution_cumulus_id != EXCLUDED.execution_cumulus_id OR p.progress < EXCLUDED.progress)`
	}
	return sql + `
RETURNING cumulus_id`
}

// v22GranuleSQL is GranulePgModel.upsert of v22.2 and later, and the
// granules_executions link. The update is keyed by granule_id alone
// (granule_id is unique across collections in v22), behind v21's guards:
// created_at not newer than the message's; for running, no finished
// execution; for queued, no execution at all. Running and queued set
// status, timestamp, updated_at and created_at only, so they update the
// granule in whichever collection holds it. Completed and failed set every
// column, the collection too: a granule held by another collection is
// refused (v22.2's "in a different collection" error; the first column
// says which) when the guards would let the update through, and left alone
// when they would not. returning is what is selected of the written row,
// aliased g, after the other collection's cumulus_id.
func v22GranuleSQL(status, returning string) string {
	var set, guard, other, sameCollection string
	switch status {
	case "running", "queued":
		set = `status = $2::text, "timestamp" = $22::timestamptz, updated_at = $5::timestamptz, created_at = $4::timestamptz`
		states := `'completed', 'failed', 'unknown'`
		if status == "queued" {
			states = `'running', 'completed', 'failed', 'unknown'`
		}
		guard = ` AND NOT EXISTS (SELECT 1 FROM executions x WHERE x.cumulus_id = $24::bigint AND x.status IN (` + states + `))`
		other = `SELECT NULL::integer AS collection_cumulus_id WHERE false`
		sameCollection = ""
	default:
		parts := make([]string, 0, len(granuleCols))
		for i, c := range granuleCols {
			if c == "granule_id" {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s = COALESCE($%d::%s, g.%s)", c, i+1, granuleTypes[i], c))
		}
		set = strings.Join(parts, ", ")
		other = `SELECT collection_cumulus_id FROM target WHERE collection_cumulus_id <> $3::integer`
		// Never a change of collection, whatever the release's trigger
		// (v22.0's lets it through): a granule another writer moved to
		// another collection since the snapshot is left alone.
		sameCollection = ` AND g.collection_cumulus_id = $3::integer`
	}
	params := make([]string, len(granuleCols))
	for i := range granuleCols {
		params[i] = fmt.Sprintf("$%d::%s", i+1, granuleTypes[i])
	}
	return `WITH target AS (
  SELECT cumulus_id, collection_cumulus_id FROM granules
  WHERE granule_id = $1::text AND created_at <= $4::timestamptz` + guard + `
), other AS (` + other + `
), ` + v22NewID("granules", "NOT EXISTS (SELECT 1 FROM granules WHERE granule_id = $1::text)") + `, upd AS (
  -- The guards are the update's own conditions, not only target's: a row
  -- another writer committed while this one waited for it is judged as
  -- it is then (PostgreSQL re-checks them on the new row version).
  UPDATE granules AS g SET ` + set + `
  WHERE g.granule_id = $1::text AND g.created_at <= $4::timestamptz` + guard + sameCollection + `
    AND NOT EXISTS (SELECT 1 FROM other)
  RETURNING g.*
), ins AS (
  INSERT INTO granules (cumulus_id, ` + strings.Join(granuleCols, ", ") + `) OVERRIDING SYSTEM VALUE
  SELECT nid.v, ` + strings.Join(params, ", ") + ` FROM nid
  WHERE NOT EXISTS (SELECT 1 FROM granules WHERE granule_id = $1::text) AND NOT EXISTS (SELECT 1 FROM taken)
  RETURNING *
), w AS (
  SELECT * FROM upd UNION ALL SELECT * FROM ins
), link AS (
  INSERT INTO granules_executions (granule_cumulus_id, collection_cumulus_id, execution_cumulus_id, execution_created_at)
  SELECT w.cumulus_id, w.collection_cumulus_id, $24::bigint, ` + v22ExecutionCreatedAt("$24::bigint") + `
  FROM w WHERE $24::bigint IS NOT NULL
  ON CONFLICT (granule_cumulus_id, execution_cumulus_id) DO NOTHING
)
SELECT coalesce((SELECT o.collection_cumulus_id::text || ':' || c.name || '___' || c.version
  FROM other o JOIN collections c ON c.cumulus_id = o.collection_cumulus_id LIMIT 1),
  (SELECT '` + takenPrefix + `' || cumulus_id FROM taken)), ` + returning + `
FROM (SELECT 1) AS one LEFT JOIN w AS g ON true`
}

// v22NewID is the CTEs nid, the cumulus_id a new row of table (granules
// or executions) takes (the column's own sequence, drawn as its default
// would draw it, only when insertIf holds), and taken, the row that
// already holds it. v22's primary keys are (cumulus_id,
// collection_cumulus_id) and (cumulus_id, created_at): a sequence moved
// back would give a granule the cumulus_id of another collection's
// granule, an execution that of an execution of another created_at, and
// every statement that finds the row by cumulus_id alone (files and
// granules_executions of a granule, v22ExecutionCreatedAt, the status
// guards, v22LinkGranulesSQL) would then reach both. The insert is
// refused instead (the statement's first column says "taken <id>"), and
// the run stops naming the sequence.
func v22NewID(table, insertIf string) string {
	return `nid AS MATERIALIZED (
  SELECT nextval(` + serialSequenceSQL("'"+table+"'", "'cumulus_id'") + `) AS v WHERE ` + insertIf + `
), taken AS (
  SELECT o.* FROM ` + table + ` o JOIN nid ON o.cumulus_id = nid.v LIMIT 1
)`
}

// v22FilesSQL is FilePgModel.upsert and the removal of the granule's other
// files: each file updates the row of its bucket and key in the granule's
// collection (re-pointing it to this granule), or is inserted. A file that
// another collection's granule holds fails the whole write on the guard
// table's unique violation, as in v22 (its files are one transaction).
// The parameters are v21's (writeFilesSQL): $1 the granule, then the
// columns as arrays, and $10 the granule's collection: the granule is named
// by its whole primary key, so a cumulus_id two granules share (a sequence
// moved back, in v22's schema) never reaches the other's files.
const v22FilesSQL = `WITH c AS (
  SELECT collection_cumulus_id AS id FROM granules WHERE cumulus_id = $1::bigint AND collection_cumulus_id = $10::integer FOR KEY SHARE
), x AS (
  SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[])
    AS x(b, k, ct, cv, fn, fs, s, t)
), upd AS (
  UPDATE files AS f SET bucket = x.b, key = x.k, checksum_type = x.ct, checksum_value = x.cv, file_name = x.fn,
    file_size = x.fs, granule_cumulus_id = $1::bigint, collection_cumulus_id = c.id, path = NULL, source = x.s, type = x.t
  FROM x, c WHERE f.bucket = x.b AND f.key = x.k AND f.collection_cumulus_id = c.id
  RETURNING f.cumulus_id, f.bucket, f.key
), ins AS (
  INSERT INTO files (bucket, key, checksum_type, checksum_value, file_name, file_size, granule_cumulus_id, collection_cumulus_id, path, source, type)
  SELECT x.b, x.k, x.ct, x.cv, x.fn, x.fs, $1::bigint, c.id, NULL, x.s, x.t FROM x, c
  WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.bucket = x.b AND upd.key = x.k)
  RETURNING cumulus_id
)
DELETE FROM files WHERE granule_cumulus_id = $1::bigint AND collection_cumulus_id = (SELECT id FROM c)
  AND cumulus_id NOT IN (SELECT cumulus_id FROM upd UNION ALL SELECT cumulus_id FROM ins)`

// v22LinkGranulesSQL links every granule with one of the granule_ids to
// the execution, with both partition keys.
const v22LinkGranulesSQL = `INSERT INTO granules_executions (granule_cumulus_id, collection_cumulus_id, execution_cumulus_id, execution_created_at)
SELECT g.cumulus_id, g.collection_cumulus_id, x.cumulus_id, x.created_at
FROM granules g JOIN executions x ON x.cumulus_id = $2
WHERE g.granule_id = ANY($1)
FOR KEY SHARE OF g, x
ON CONFLICT (granule_cumulus_id, execution_cumulus_id) DO NOTHING`

// v22OtherCollectionError is v22.2's refusal of a completed or failed
// granule whose granule_id another collection holds (GranulePgModel.upsert,
// which names the collection by its cumulus_id; its name follows, as v21's
// refusal gives it here).
func v22OtherCollectionError(granuleID string, otherCumulusID int64, otherName string) error {
	return fmt.Errorf("Error: A granule already exists for granuleId: %s in a different collection %d. (collection %d is %s)",
		granuleID, otherCumulusID, otherCumulusID, otherName)
}

// The plain inserts v22's models try first (in a savepoint: an insert
// that meets a row, in its table or in a guard table, fails with a unique
// violation and the full statement above runs). A new row, the common case
// of a recovery, is then written by a statement PostgreSQL plans and runs
// cheaply: no update over every partition.

// v22ExecutionInsertSQL inserts the execution; returning as in
// v22ExecutionSQL.
func v22ExecutionInsertSQL(returning string) string {
	return `WITH ` + v22NewID("executions", "true") + `, ins AS (
  INSERT INTO executions (cumulus_id, ` + executionCols + `, parent_created_at) OVERRIDING SYSTEM VALUE
  SELECT nid.v, $1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10::jsonb, $11::jsonb, $12::jsonb, $13, $14, $15, $16::bigint, ` + v22ExecutionCreatedAt("$16::bigint") + `
  FROM nid WHERE NOT EXISTS (SELECT 1 FROM taken)
  RETURNING *
)
SELECT ` + v22ExecutionResult(returning, "ins")
}

// v22ExecutionResult is the selection of an execution statement: "taken
// <id>" when the drawn cumulus_id was taken (the row then selected is the
// execution holding it, which the caller never reads), then returning, of
// the written row, of the statement's CTEs written (upd and ins, or ins).
func v22ExecutionResult(returning string, written ...string) string {
	from := ""
	for _, w := range append(written, "taken") {
		from += "SELECT * FROM " + w + " UNION ALL "
	}
	return `(SELECT '` + takenPrefix + `' || cumulus_id FROM taken), ` + returning + `
FROM (` + strings.TrimSuffix(from, " UNION ALL ") + `) AS up`
}

// v22GranuleInsertSQL inserts the granule and links it to its execution;
// its result is v22GranuleSQL's (no other collection: a granule_id held
// anywhere fails the insert).
func v22GranuleInsertSQL(returning string) string {
	params := make([]string, len(granuleCols))
	for i := range granuleCols {
		params[i] = fmt.Sprintf("$%d::%s", i+1, granuleTypes[i])
	}
	return `WITH ` + v22NewID("granules", "true") + `, ins AS (
  INSERT INTO granules (cumulus_id, ` + strings.Join(granuleCols, ", ") + `) OVERRIDING SYSTEM VALUE
  SELECT nid.v, ` + strings.Join(params, ", ") + ` FROM nid WHERE NOT EXISTS (SELECT 1 FROM taken)
  RETURNING *
), link AS (
  INSERT INTO granules_executions (granule_cumulus_id, collection_cumulus_id, execution_cumulus_id, execution_created_at)
  SELECT ins.cumulus_id, ins.collection_cumulus_id, $24::bigint, ` + v22ExecutionCreatedAt("$24::bigint") + `
  FROM ins WHERE $24::bigint IS NOT NULL
  ON CONFLICT (granule_cumulus_id, execution_cumulus_id) DO NOTHING
)
SELECT (SELECT '` + takenPrefix + `' || cumulus_id FROM taken), ` + returning + `
FROM (SELECT 1) AS one LEFT JOIN ins AS g ON true`
}

// v22FilesInsertSQL inserts the granule's files and removes its others
// (v22FilesSQL's parameters and effect, when no file exists yet).
const v22FilesInsertSQL = `WITH c AS (
  SELECT collection_cumulus_id AS id FROM granules WHERE cumulus_id = $1::bigint AND collection_cumulus_id = $10::integer FOR KEY SHARE
), ins AS (
  INSERT INTO files (bucket, key, checksum_type, checksum_value, file_name, file_size, granule_cumulus_id, collection_cumulus_id, path, source, type)
  SELECT x.b, x.k, x.ct, x.cv, x.fn, x.fs, $1::bigint, c.id, NULL, x.s, x.t
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[]) AS x(b, k, ct, cv, fn, fs, s, t), c
  RETURNING cumulus_id
)
DELETE FROM files WHERE granule_cumulus_id = $1::bigint AND collection_cumulus_id = (SELECT id FROM c)
  AND cumulus_id NOT IN (SELECT cumulus_id FROM ins)`
