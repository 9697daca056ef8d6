package cumulusdb

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deadletter/deadletter/internal/recovery"
)

// Whose an error is is decided from what PostgreSQL reports as fields, in
// every language: the SQLSTATE, the relation (a partition mapped to the
// table it belongs to, read from the catalog), the column and the
// constraint. The message text is never read: a server whose lc_messages
// is German says "keine Partition von Relation »executions« für die Zeile
// gefunden" where an English one says "no partition of relation".

// relation is what the catalog says of a relation PostgreSQL named in an
// error.
type relation struct {
	// table is the table the relation is or belongs to: a partition's
	// partitioned root (files_p3 is files).
	table string
	// partitioned: the named relation is itself partitioned, so a row it
	// refused is one no partition of it takes.
	partitioned bool
	// key is its partition key's columns, comma-separated (when
	// partitioned).
	key string
}

// resolvedError is a PostgreSQL error with the relation it names read
// from the catalog, and the generation the run writes.
type resolvedError struct {
	err error // holds the *pgconn.PgError
	rel relation
	gen Generation
}

func (e *resolvedError) Error() string { return e.err.Error() }
func (e *resolvedError) Unwrap() error { return e.err }

// guardColumns are the guard tables' columns, filled by Cumulus's triggers
// from the columns the writes fill.
var guardColumns = map[string][]string{
	"executions_global_unique": {"arn", "url"},
	"granules_global_unique":   {"granule_id"},
	"files_global_unique":      {"bucket", "key"},
}

// filledBy reports whether column of table is one the writes of gen fill
// (directly, or through a guard trigger). A table they never write is
// filled by none: its NOT NULL or CHECK failures are someone else's. gen
// "" (not known) takes every generation's columns.
func filledBy(gen Generation, table, column string) bool {
	cols, ours := WrittenColumns[table]
	if !ours {
		cols, ours = guardColumns[table]
		if !ours || gen == V21 {
			return false
		}
	}
	if column == "" {
		return true
	}
	if !slices.Contains(cols, column) {
		return false
	}
	return gen.Partitioned() || gen == "" || !slices.Contains(v22Columns[table], column)
}

// isRoutingFailure: a row PostgreSQL could not route to a partition
// (SQLSTATE 23514 with no constraint named: a CHECK violation always names
// its constraint, "no partition of relation … found for row" and "violates
// partition constraint" never do).
func isRoutingFailure(pgErr *pgconn.PgError) bool {
	return pgErr.Code == "23514" && pgErr.ConstraintName == ""
}

// schemaSuspect are the SQLSTATEs a schema changed under the run can
// explain beside the data's own (class 22 and 23, P0): an undefined table,
// column or function, an ON CONFLICT without its constraint, a column of
// another type.
var schemaSuspect = map[string]bool{"42P01": true, "42703": true, "42883": true, "42P10": true, "42804": true}

// partitionKeyValue reads "(created_at) = (2024-03-02 00:00:00+00)" out of
// a routing failure's detail: the key and value PostgreSQL prints as they
// are, in every language ("Partition key of the failing row contains …",
// "Partitionierungsschlüssel der fehlgeschlagenen Zeile enthält …").
var partitionKeyValue = regexp.MustCompile(`\(([^()]+)\) = \(([^()]*)\)`)

// missingPartitionLine is the stop line of a row no partition takes: the
// table, the partition key and the row's value, the quarter for v22's
// quarterly executions, and what to do.
func missingPartitionLine(pgErr *pgconn.PgError, rel relation) string {
	table := rel.table
	if table == "" {
		table = pgErr.TableName
	}
	if table == "" {
		table = "the table"
	}
	key, value := rel.key, ""
	if m := partitionKeyValue.FindStringSubmatch(pgErr.Detail); m != nil {
		key, value = m[1], m[2]
	}
	if key == "" {
		key = "partition key"
	}
	what := fmt.Sprintf("the row's %s", key)
	if value != "" {
		what = fmt.Sprintf("%s %s", key, value)
	}
	fix := "create the partition that takes it"
	if t, err := time.Parse("2006-01-02", firstN(value, 10)); err == nil && key == "created_at" {
		q := (int(t.Month())-1)/3 + 1
		start := time.Date(t.Year(), time.Month((q-1)*3+1), 1, 0, 0, 0, 0, time.UTC)
		what += fmt.Sprintf(", quarter %d Q%d", t.Year(), q)
		fix = fmt.Sprintf("create the partition of %d Q%d (Cumulus v22's create_future_executions_partitions procedure, or CREATE TABLE %s_%d_q%d PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s'))",
			t.Year(), q, table, t.Year(), q, table, start.Format("2006-01-02"), start.AddDate(0, 3, 0).Format("2006-01-02"))
	}
	return fmt.Sprintf("PostgreSQL: no partition of %s takes this row (%s) and it has no default partition (SQLSTATE %s; the server said: %s): %s, then run again",
		table, what, pgErr.Code, pgErr.Message, fix)
}

func firstN(s string, n int) string {
	if len(s) < n {
		return s
	}
	return s[:n]
}

// schemaWatch is what a run's DB knows of the schema it started on: the
// relations its errors named, and the schema's fingerprint, read again
// when an error could be the schema's doing.
type schemaWatch struct {
	gen  Generation
	rels sync.Map // schema "\x00" name -> relation

	mu      sync.Mutex
	base    Fingerprint // the schema the run started on; nil: never compared
	stamp   string      // the catalog's stamp that base stands for (stamp)
	checked time.Time   // when the last comparison began
	last    []change    // what it found changed (none: unchanged)
}

// resolve reads the relation pgErr names from the catalog (once per
// relation), on q. ok is false when it could not be read.
func (w *schemaWatch) resolve(ctx context.Context, q querier, pgErr *pgconn.PgError) (relation, bool) {
	k := pgErr.SchemaName + "\x00" + pgErr.TableName
	if v, ok := w.rels.Load(k); ok {
		return v.(relation), true
	}
	var rel relation
	err := q.QueryRow(ctx, `SELECT r.relname::text, c.relkind = 'p',
  coalesce((SELECT string_agg(a.attname::text, ',' ORDER BY k.n)
    FROM pg_partitioned_table p, unnest(p.partattrs::int2[]) WITH ORDINALITY AS k(attnum, n)
    JOIN pg_attribute a ON a.attnum = k.attnum
    WHERE p.partrelid = c.oid AND a.attrelid = c.oid), '')
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_class r ON r.oid = coalesce(pg_partition_root(c.oid), c.oid)
WHERE c.relname = $1 AND ($2 = '' OR n.nspname = $2)
ORDER BY n.nspname = ANY (current_schemas(false)) DESC
LIMIT 1`, pgErr.TableName, pgErr.SchemaName).Scan(&rel.table, &rel.partitioned, &rel.key)
	if err != nil {
		return relation{}, false
	}
	w.rels.Store(k, rel)
	return rel, true
}

// SchemaChangedError: what the writes reach is no longer what the run
// started on. An error the change could explain is not blamed on the
// message: the run stops with the object in place.
type SchemaChangedError struct {
	// Changes are those of the tables the writes fill (and their
	// partitions): their columns, constraints, triggers, unique indexes.
	Changes []string
	// Elsewhere are those outside the tables that the writes may run or
	// check: a function a trigger, constraint or default calls (or that
	// such a function names), a column's domain.
	Elsewhere []string
	// MayBeUnrelated: some of Elsewhere are reached only by name from a
	// function's source (or not seen called at all, beside a function
	// that runs SQL dla cannot read), so the write may never call them.
	MayBeUnrelated bool
	Cause          error // the error that made the run look again
}

func (e *SchemaChangedError) Unwrap() error { return e.Cause }

func (e *SchemaChangedError) Error() string {
	tables, elsewhere := e.Changes, e.Elsewhere
	more := ""
	if n := len(tables) + len(elsewhere); n > 8 {
		more = fmt.Sprintf(" and %d more", n-8)
		tables = tables[:min(len(tables), 8)]
		elsewhere = elsewhere[:min(len(elsewhere), 8-len(tables))]
	}
	code := ""
	var pgErr *pgconn.PgError
	if errors.As(e.Cause, &pgErr) {
		code = " (SQLSTATE " + pgErr.Code + ")"
		if pgErr.TableName != "" {
			code = " (SQLSTATE " + pgErr.Code + " on " + pgErr.TableName + ")"
		}
	}
	var b strings.Builder
	switch {
	case len(e.Changes) > 0:
		b.WriteString("the Cumulus schema changed during the run: " + strings.Join(tables, "; "))
		if len(elsewhere) > 0 {
			b.WriteString("; and outside its tables, in what the writes run: " + strings.Join(elsewhere, "; "))
		}
	default:
		b.WriteString("the database changed during the run outside the Cumulus tables, in what the writes run: " + strings.Join(elsewhere, "; "))
	}
	b.WriteString(more + "; a write failed" + code + " after the change, so no message is blamed for it and nothing more is moved")
	if e.MayBeUnrelated && len(e.Changes) == 0 {
		b.WriteString(". The change may be unrelated to the write (dla sees only which functions the source names): run again, and the re-run goes on, taking the database as it then is")
	} else {
		if len(e.Changes) > 0 {
			b.WriteString(": run again once the schema is one dla writes (dla recover checks it before it starts)")
		} else {
			b.WriteString(": run again once the database is one dla writes (dla recover checks it before it starts)")
		}
	}
	return b.String()
}

// recheck compares the schema with the one the run started on, for an
// error seen at since: a comparison that began after since answers for
// it, so a burst of errors shares one. nil: unchanged (or never
// compared).
func (w *schemaWatch) recheck(ctx context.Context, q querier, since time.Time) ([]change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.base == nil {
		return nil, nil
	}
	if w.checked.After(since) {
		return w.last, nil
	}
	began := time.Now()
	st, err := stamp(ctx, q)
	if err != nil {
		return nil, err
	}
	if st == w.stamp {
		// No catalog row the fingerprint reads was written since.
		w.checked, w.last = began, nil
		return nil, nil
	}
	now, err := fingerprint(ctx, q)
	if err != nil {
		return nil, err
	}
	ch := changes(w.base, now)
	if len(ch) == 0 {
		// Rows were written that the fingerprint leaves out (a quarter's
		// partition created, an inherited constraint): the next
		// comparison starts from them.
		w.stamp = st
	}
	w.checked, w.last = began, ch
	return ch, nil
}

// stamp is one cheap value that changes whenever a catalog row the
// fingerprint is read from is written: the transaction ids (xmin) of the
// rows of the tables and their partitions, their columns, constraints
// and triggers, of every trigger, default and view's rewrite rule of the
// database (a table or view a function names may run them), of every
// domain and its constraints, and of every function outside pg_catalog
// and information_schema (a wider set than the fingerprint's: which
// functions the writes reach is read from their source, by fingerprint,
// only when the stamp moved; a function created or replaced anywhere
// moves it, and the fingerprint then says whether the writes reach it).
// DDL writes those rows as any update does (an ALTER TABLE, a CREATE OR
// REPLACE FUNCTION, an ALTER DOMAIN, an ENABLE TRIGGER, a new partition),
// while ANALYZE and autovacuum update pg_class in place and leave xmin as
// it was. The full fingerprint is read only when the stamp moved: a run
// whose messages fail by the thousand compares one short row each time,
// not the whole schema (which, at 2 ms from the database, made a run of
// 600 objects 2.6 times slower).
func stamp(ctx context.Context, q querier) (string, error) {
	names := append(append([]string{}, Tables...), v22Guards...)
	var st string
	err := q.QueryRow(ctx, `WITH t AS (SELECT to_regclass(quote_ident(name)) AS oid FROM unnest($1::text[]) AS name),
r AS MATERIALIZED (SELECT array_agg(DISTINCT o) AS oids FROM (
  SELECT p.relid AS o FROM t CROSS JOIN LATERAL pg_partition_tree(t.oid) p WHERE t.oid IS NOT NULL
  UNION ALL SELECT t.oid FROM t WHERE t.oid IS NOT NULL) x)
SELECT md5(coalesce(string_agg(x, ',' ORDER BY x), '')) FROM (
  SELECT 'c' || c.oid || '@' || c.xmin AS x FROM pg_class c WHERE c.oid = ANY ((SELECT oids FROM r)::oid[])
  UNION ALL SELECT 'a' || a.attrelid || '.' || a.attnum || '@' || a.xmin FROM pg_attribute a WHERE a.attrelid = ANY ((SELECT oids FROM r)::oid[]) AND a.attnum > 0
  UNION ALL SELECT 'd' || d.oid || '@' || d.xmin FROM pg_attrdef d
  UNION ALL SELECT 'w' || w.oid || '@' || w.xmin FROM pg_rewrite w WHERE w.oid >= 16384
  UNION ALL SELECT 'k' || k.oid || '@' || k.xmin FROM pg_constraint k WHERE k.conrelid = ANY ((SELECT oids FROM r)::oid[]) OR k.contypid <> 0
  UNION ALL SELECT 'g' || g.oid || '@' || g.xmin FROM pg_trigger g WHERE g.tgrelid = ANY ((SELECT oids FROM r)::oid[]) OR NOT g.tgisinternal
  UNION ALL SELECT 'i' || i.indexrelid || '@' || i.xmin FROM pg_index i WHERE i.indrelid = ANY ((SELECT oids FROM r)::oid[])
  UNION ALL SELECT 'y' || y.oid || '@' || y.xmin FROM pg_type y WHERE y.typtype = 'd'
  UNION ALL SELECT 'p' || p.oid || '@' || p.xmin FROM pg_proc p
    WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION ALL SELECT 't' || (SELECT count(*) FROM t WHERE t.oid IS NULL)
) s`, names).Scan(&st)
	return st, err
}

// Fingerprint is a schema's shape as the writes depend on it: the tables'
// kinds, their columns (type, NOT NULL, default), constraints (whose
// definition says NOT VALID until validated) and triggers
// (with their functions' source), by name; what was added to one
// partition only (a CHECK constraint, a trigger, a NOT NULL, a cloned
// trigger disabled there), which refuses the rows routed to it as surely
// as on the table; the unique indexes of the tables and those made on one
// partition alone (CREATE UNIQUE INDEX makes no constraint); the domains
// of the columns and those they are built on (base type, NOT NULL,
// default, constraints); and the functions the writes can reach, and no
// others, wherever they live:
//   - for certain: the trigger functions of the tables and partitions, and
//     the functions their constraints, defaults, indexes and domains call
//     (pg_depend), or the operators they use run (pg_operator.oprcode);
//   - by name: PL/pgSQL and SQL callees are not in pg_depend, so from the
//     source of each function reached, every function of a name followed
//     by "(", and of every table or view named (an audit table a trigger
//     writes, a view it reads) the trigger functions, the functions its
//     defaults, constraints and columns' domains call and those a view's
//     rewrite rule (and the views it reads) calls, 8 calls deep, in every
//     schema but pg_catalog and information_schema (a name may be another
//     schema's function, so such a change may be unrelated);
//   - beside a function reached that runs SQL whose callees cannot be read
//     (PL/pgSQL's EXECUTE, or a language other than SQL, PL/pgSQL, C and
//     internal): every function, an extension's apart.
//
// A function nothing reaches (a CREATE FUNCTION nobody calls) is no part
// of it. A value is the definition compared, then, after \x1f, "1" when
// the object is reached only by name or not seen called, and how it is
// reached (entry). Partitions themselves are left out, and what
// PostgreSQL derives for each of them (their inherited constraints and
// cloned triggers, a foreign key to a partitioned table's one per
// partition): a deployment adds quarters as time goes on
// (create_future_executions_partitions).
type Fingerprint map[string]string

// functionDef is a function's definition as the fingerprint compares it
// (an aggregate has no pg_get_functiondef: its pg_aggregate row).
const functionDef = `CASE WHEN p.prokind = 'a' THEN md5(coalesce((SELECT a::text FROM pg_aggregate a WHERE a.aggfnoid = p.oid), ''))
  ELSE md5(pg_get_functiondef(p.oid)) END`

func fingerprint(ctx context.Context, q querier) (Fingerprint, error) {
	names := append(append([]string{}, Tables...), v22Guards...)
	rows, err := q.Query(ctx, `WITH RECURSIVE t AS (SELECT name, to_regclass(quote_ident(name)) AS oid FROM unnest($1::text[]) AS name),
rels AS (SELECT t.oid AS relid FROM t WHERE t.oid IS NOT NULL UNION SELECT p.relid FROM t CROSS JOIN LATERAL pg_partition_tree(t.oid) p),
-- The columns' types and what each is built on (a domain's base type,
-- an array's element): the domains among them check every value written.
coltypes(oid, col) AS (
  SELECT a.atttypid, t.name || '.' || a.attname FROM t JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
  UNION
  SELECT CASE WHEN y.typtype = 'd' THEN y.typbasetype ELSE y.typelem END, c.col
  FROM coltypes c JOIN pg_type y ON y.oid = c.oid WHERE y.typtype = 'd' OR y.typelem <> 0),
domains AS (SELECT c.oid, string_agg(DISTINCT c.col, ', ') AS cols FROM coltypes c JOIN pg_type y ON y.oid = c.oid AND y.typtype = 'd' GROUP BY c.oid),
-- The functions an object calls as pg_depend records it: those it names,
-- and those of the operators it uses (a CHECK's OPERATOR(helpers.<~>)
-- depends on the operator, which runs its oprcode).
callee(classid, objid, oid) AS NOT MATERIALIZED (
  SELECT d.classid, d.objid, CASE WHEN d.refclassid = 'pg_operator'::regclass THEN o.oprcode::oid ELSE d.refobjid END
  FROM pg_depend d LEFT JOIN pg_operator o ON d.refclassid = 'pg_operator'::regclass AND o.oid = d.refobjid
  WHERE d.refclassid = 'pg_proc'::regclass OR o.oprcode <> 0),
-- The views a view reads, transitively (itself among them): reading a
-- view runs the functions their rewrite rules call.
views(view, rel) AS (
  SELECT c.oid, c.oid FROM pg_class c WHERE c.relkind = 'v'
    AND c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION
  SELECT v.view, d.refobjid FROM views v JOIN pg_rewrite w ON w.ev_class = v.rel
  JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid AND d.refclassid = 'pg_class'::regclass AND d.refobjid <> v.rel
  JOIN pg_class c ON c.oid = d.refobjid AND c.relkind = 'v'),
-- The functions a write runs for certain: the tables' and partitions'
-- trigger functions, and those their constraints, defaults (and
-- generated columns), indexes and domains call (pg_depend).
seeds(oid, via) AS (
  SELECT g.tgfoid, 'the function of trigger ' || g.tgrelid::regclass::text || '.' || g.tgname
  FROM rels c JOIN pg_trigger g ON g.tgrelid = c.relid AND NOT g.tgisinternal
  UNION SELECT d.oid, 'called by constraint ' || k.conrelid::regclass::text || '.' || k.conname
  FROM rels c JOIN pg_constraint k ON k.conrelid = c.relid
  JOIN callee d ON d.classid = 'pg_constraint'::regclass AND d.objid = k.oid
  UNION SELECT d.oid, 'called by the default of ' || a.adrelid::regclass::text || '.' || att.attname
  FROM rels c JOIN pg_attrdef a ON a.adrelid = c.relid JOIN pg_attribute att ON att.attrelid = a.adrelid AND att.attnum = a.adnum
  JOIN callee d ON d.classid = 'pg_attrdef'::regclass AND d.objid = a.oid
  UNION SELECT d.oid, 'called by index ' || x.indexrelid::regclass::text
  FROM rels c JOIN pg_index x ON x.indrelid = c.relid
  JOIN callee d ON d.classid = 'pg_class'::regclass AND d.objid = x.indexrelid
  UNION SELECT d.oid, 'called by constraint ' || k.conname || ' of domain ' || m.oid::regtype::text
  FROM domains m JOIN pg_constraint k ON k.contypid = m.oid
  JOIN callee d ON d.classid = 'pg_constraint'::regclass AND d.objid = k.oid
  UNION SELECT d.oid, 'called by the default of domain ' || m.oid::regtype::text
  FROM domains m JOIN callee d ON d.classid = 'pg_type'::regclass AND d.objid = m.oid),
-- What a name in a function's source can reach: a function of that
-- name (when a "(" follows it); of a table or view of that name (which
-- the function may write or read), outside the system schemas: its
-- trigger functions, the functions its defaults, constraints and its
-- columns' domains call, and those a view's rewrite rule calls (of the
-- views it reads too). hook says how, up to the function naming it.
names(word, oid, hook) AS (
  SELECT p.proname::text, p.oid, NULL::text FROM pg_proc p WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION ALL SELECT c.relname::text, h.oid, h.hook
  FROM (SELECT c.oid, c.relname FROM pg_class c
    WHERE c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)) c JOIN (
    SELECT g.tgrelid AS rel, g.tgfoid AS oid, 'the function of trigger ' || g.tgrelid::regclass::text || '.' || g.tgname || ', a table' AS hook
    FROM pg_trigger g WHERE NOT g.tgisinternal AND g.tgparentid = 0
    UNION ALL SELECT f.adrelid, d.oid, 'called by the default of ' || f.adrelid::regclass::text || '.' || a.attname || ', a table'
    FROM pg_attrdef f JOIN pg_attribute a ON a.attrelid = f.adrelid AND a.attnum = f.adnum
    JOIN callee d ON d.classid = 'pg_attrdef'::regclass AND d.objid = f.oid
    UNION ALL SELECT k.conrelid, d.oid, 'called by constraint ' || k.conrelid::regclass::text || '.' || k.conname || ', a table'
    FROM pg_constraint k JOIN callee d ON d.classid = 'pg_constraint'::regclass AND d.objid = k.oid
    UNION ALL SELECT a.attrelid, d.oid, 'called by constraint ' || k.conname || ' of domain ' || y.oid::regtype::text || ', the type of ' || a.attrelid::regclass::text || '.' || a.attname || ', a table'
    FROM pg_attribute a JOIN pg_type y ON y.oid = a.atttypid AND y.typtype = 'd' JOIN pg_constraint k ON k.contypid = y.oid
    JOIN callee d ON d.classid = 'pg_constraint'::regclass AND d.objid = k.oid WHERE a.attnum > 0 AND NOT a.attisdropped
    UNION ALL SELECT v.view, d.oid, 'called by view ' || v.rel::regclass::text || CASE WHEN v.rel <> v.view THEN ', which view ' || v.view::regclass::text || ' reads' ELSE '' END || ', a view'
    FROM views v JOIN pg_rewrite w ON w.ev_class = v.rel JOIN callee d ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid) h ON h.rel = c.oid),
-- PL/pgSQL and SQL callees are not in pg_depend: the functions named in
-- the source of a function reached, transitively (8 calls deep).
reach(oid, via, unsure, depth) AS (
  SELECT oid, via, false, 0 FROM seeds
  UNION
  SELECT e.oid, CASE WHEN e.hook IS NULL THEN 'which ' || f.oid::regprocedure::text || ' names'
    ELSE e.hook || ' ' || f.oid::regprocedure::text || ' names' END, true, r.depth + 1
  FROM reach r JOIN pg_proc f ON f.oid = r.oid AND f.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
    AND f.prolang IN (SELECT l.oid FROM pg_language l WHERE l.lanname IN ('sql', 'plpgsql'))
  CROSS JOIN LATERAL (SELECT DISTINCT CASE WHEN left(m[1], 1) = '"' THEN replace(substr(m[1], 2, length(m[1]) - 2), '""', '"') ELSE lower(m[1]) END AS word,
      m[2] IS NOT NULL AS call
    FROM regexp_matches(CASE WHEN f.prosrc <> '' THEN f.prosrc ELSE pg_get_functiondef(f.oid) END,
      '("(?:[^"]|"")+"|[[:alpha:]_][[:alnum:]_$]*)(\s*\()?', 'g') AS m) w
  JOIN names e ON e.word = w.word AND (w.call OR e.hook IS NOT NULL)
  WHERE r.depth < 8),
best AS (SELECT DISTINCT ON (oid) oid, via, unsure FROM reach ORDER BY oid, depth, length(via), via),
-- A function reached whose source dla cannot read for what it calls:
-- PL/pgSQL's EXECUTE (dynamic SQL), or a language other than SQL,
-- PL/pgSQL, C and internal.
opaque AS (SELECT min(f.oid::regprocedure::text) AS sig FROM best b JOIN pg_proc f ON f.oid = b.oid JOIN pg_language l ON l.oid = f.prolang
  WHERE f.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
    AND ((l.lanname = 'plpgsql' AND f.prosrc ~* '\mexecute\M') OR l.lanname NOT IN ('sql', 'plpgsql', 'c', 'internal')))
SELECT 'table ' || t.name, coalesce((SELECT CASE c.relkind WHEN 'p' THEN 'partitioned' ELSE 'plain' END FROM pg_class c WHERE c.oid = t.oid), 'missing') FROM t
UNION ALL
SELECT 'column ' || t.name || '.' || a.attname, format_type(a.atttypid, a.atttypmod)
  || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
  || coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')
  || CASE WHEN a.attidentity <> '' THEN ' IDENTITY' ELSE '' END
  || CASE WHEN a.attgenerated <> '' THEN ' GENERATED' ELSE '' END
FROM t JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
UNION ALL
SELECT 'constraint ' || t.name || '.' || c.conname, pg_get_constraintdef(c.oid)
FROM t JOIN pg_constraint c ON c.conrelid = t.oid AND c.conparentid = 0
UNION ALL
SELECT 'trigger ' || t.name || '.' || g.tgname, pg_get_triggerdef(g.oid)
  || CASE g.tgenabled WHEN 'D' THEN ' (disabled)' ELSE '' END || ' [function ' || md5(p.prosrc) || ']'
FROM t JOIN pg_trigger g ON g.tgrelid = t.oid AND NOT g.tgisinternal
JOIN pg_proc p ON p.oid = g.tgfoid
UNION ALL
SELECT 'constraint ' || c.relid::regclass::text || '.' || k.conname, pg_get_constraintdef(k.oid)
FROM t CROSS JOIN LATERAL pg_partition_tree(t.oid) c JOIN pg_constraint k ON k.conrelid = c.relid AND k.conparentid = 0 AND k.conislocal
WHERE c.level > 0
UNION ALL
SELECT 'trigger ' || c.relid::regclass::text || '.' || g.tgname, pg_get_triggerdef(g.oid)
  || CASE g.tgenabled WHEN 'D' THEN ' (disabled)' ELSE '' END || ' [function ' || md5(p.prosrc) || ']'
FROM t CROSS JOIN LATERAL pg_partition_tree(t.oid) c JOIN pg_trigger g ON g.tgrelid = c.relid AND NOT g.tgisinternal
JOIN pg_proc p ON p.oid = g.tgfoid
LEFT JOIN pg_trigger pg ON pg.oid = g.tgparentid
WHERE c.level > 0 AND (g.tgparentid = 0 OR g.tgenabled IS DISTINCT FROM pg.tgenabled)
UNION ALL
SELECT 'unique index ' || c.relid::regclass::text || '.' || x.indexrelid::regclass::text, pg_get_indexdef(x.indexrelid)
FROM rels c JOIN pg_index x ON x.indrelid = c.relid AND x.indisunique
WHERE NOT EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = x.indexrelid)
UNION ALL
SELECT 'column ' || c.relid::regclass::text || '.' || a.attname, 'NOT NULL on the partition only'
FROM t CROSS JOIN LATERAL pg_partition_tree(t.oid) c JOIN pg_attribute a ON a.attrelid = c.relid AND a.attnum > 0 AND NOT a.attisdropped AND a.attnotnull
JOIN pg_attribute r ON r.attrelid = t.oid AND r.attname = a.attname AND NOT r.attnotnull
WHERE c.level > 0
UNION ALL
SELECT 'domain ' || y.oid::regtype::text, format_type(y.typbasetype, y.typtypmod)
  || CASE WHEN y.typnotnull THEN ' NOT NULL' ELSE '' END || coalesce(' DEFAULT ' || y.typdefault, '')
  || coalesce((SELECT ' ' || string_agg('CONSTRAINT ' || k.conname || ' ' || pg_get_constraintdef(k.oid), ' ' ORDER BY k.conname)
    FROM pg_constraint k WHERE k.contypid = y.oid), '')
  || E'\x1f0\x1f' || 'the type of ' || m.cols
FROM domains m JOIN pg_type y ON y.oid = m.oid
UNION ALL
SELECT 'function ' || p.oid::regprocedure::text, `+functionDef+` || E'\x1f' || CASE WHEN b.unsure THEN '1' ELSE '0' END || E'\x1f' || b.via
FROM best b JOIN pg_proc p ON p.oid = b.oid
WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
UNION ALL
-- Beside a function that runs SQL dla cannot read, any function may be
-- called (an extension's are left out: an extension is updated with
-- ALTER EXTENSION, not mid-run by a neighbour).
SELECT 'function ' || p.oid::regprocedure::text, `+functionDef+` || E'\x1f1\x1f' || 'not seen called, but ' || o.sig || ' runs SQL dla cannot read (EXECUTE, or another language)'
FROM pg_proc p, opaque o
WHERE o.sig IS NOT NULL AND p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace) AND p.oid NOT IN (SELECT oid FROM best)
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')`, names)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	f := Fingerprint{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		f[k] = v
	}
	return f, rows.Err()
}

// change is one difference between two fingerprints.
type change struct {
	line string
	// elsewhere: outside the tables the writes fill (a function, a
	// domain).
	elsewhere bool
	// unsure: reached only by a name in a function's source, or not seen
	// called at all (fingerprint's reach).
	unsure bool
}

// entry splits a fingerprint value into what is compared (the object's
// definition) and how the writes reach it, with whether that is only by
// name ("1") or for certain ("0"): fingerprint writes them joined by
// \x1f. A value without them is all definition.
func entry(v string) (def, unsure, via string) {
	def, rest, ok := strings.Cut(v, "\x1f")
	if !ok {
		return v, "", ""
	}
	unsure, via, _ = strings.Cut(rest, "\x1f")
	return def, unsure, via
}

// changes says what differs from base to now, one line each, sorted.
// Only definitions are compared: a function reached another way is the
// same function.
func changes(base, now Fingerprint) []change {
	var out []change
	add := func(k, v, what string) {
		_, unsure, via := entry(v)
		c := change{elsewhere: strings.HasPrefix(k, "function ") || strings.HasPrefix(k, "domain "), unsure: unsure == "1"}
		if via != "" {
			k += ", " + via + ","
		}
		c.line = k + " " + what
		out = append(out, c)
	}
	for k, v := range base {
		was, _, _ := entry(v)
		is, ok := now[k]
		switch {
		case !ok:
			add(k, v, shown(k, was)+"is gone")
		default:
			if isDef, _, _ := entry(is); isDef != was {
				if strings.HasPrefix(k, "function ") {
					add(k, is, "was replaced (its definition is another)")
				} else {
					add(k, is, fmt.Sprintf("was %q, is %q", was, isDef))
				}
			}
		}
	}
	for k, v := range now {
		if _, ok := base[k]; !ok {
			is, _, _ := entry(v)
			add(k, v, shown(k, is)+"is new")
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].line < out[j].line })
	return out
}

// shown is a definition as a change line prints it, in parentheses: not a
// function's (a digest of its source says nothing to the reader).
func shown(k, def string) string {
	if strings.HasPrefix(k, "function ") {
		return ""
	}
	return "(" + def + ") "
}

// classify is Classify for the errors of d's writes: the relation the
// error names is read from the catalog (a partition is its table), and an
// error that a schema changed under the run could explain first compares
// the schema with the one the run started on. A changed schema is the
// environment's, whatever the error: the object stays in place.
func (d *DB) classify(ctx context.Context, err error) error {
	return d.classifyAt(ctx, err, time.Now())
}

// classifyAt is classify for an error PostgreSQL returned at seen (a
// pipeline's statements all returned when it did: one comparison of the
// schema answers for all of them).
func (d *DB) classifyAt(ctx context.Context, err error, seen time.Time) error {
	var pgErr *pgconn.PgError
	if err == nil || !errors.As(err, &pgErr) || d.watch == nil {
		return Classify(err)
	}
	if pgErr.TableName != "" {
		if rel, ok := d.watch.resolve(ctx, d.q, pgErr); ok {
			err = &resolvedError{err: err, rel: rel, gen: d.gen}
		}
	}
	if pgErr.Code == "23505" {
		// A key the database fills (a cumulus_id) is its own (sequences.go).
		if serr := d.sequenceFault(ctx, err, pgErr); serr != nil {
			return serr
		}
	}
	if owner := ErrorOwner(err); owner == OfTheMessage || schemaSuspect[pgErr.Code] || messageClasses[pgErr.Code[:min(2, len(pgErr.Code))]] {
		was := d.watch.currentStamp()
		changed, cerr := d.watch.recheck(ctx, d.q, seen)
		if cerr == nil && len(changed) == 0 && d.watch.currentStamp() != was {
			if serr := d.sequencesAfterStampMoved(ctx, err); serr != nil {
				return serr
			}
		}
		switch {
		case cerr != nil && owner == OfTheMessage && ctx.Err() == nil && !d.inTx:
			// (Inside a dry run's transaction an error outside a savepoint
			// leaves it unable to read the catalog; a dry run moves
			// nothing, so its verdict stands as PostgreSQL gave it.)
			return &recovery.TransientError{Err: fmt.Errorf("PostgreSQL: %s (SQLSTATE %s), and the schema could not be read again to tell whether it changed under the run: %w", pgErr.Message, pgErr.Code, cerr)}
		case len(changed) > 0:
			sc := &SchemaChangedError{Cause: err}
			for _, c := range changed {
				if c.elsewhere {
					sc.Elsewhere = append(sc.Elsewhere, c.line)
					sc.MayBeUnrelated = sc.MayBeUnrelated || c.unsure
				} else {
					sc.Changes = append(sc.Changes, c.line)
				}
			}
			return &recovery.TransientError{Err: sc}
		}
	}
	return Classify(err)
}

// Watch makes d's errors classified against the schema the run started on
// (base, read by Open): the relations they name resolved from the
// catalog, and the schema compared with base when an error could be its
// doing.
func (d *DB) Watch(base Fingerprint, baseStamp string) *DB {
	d.watch = &schemaWatch{gen: d.gen, base: base, stamp: baseStamp}
	return d
}
