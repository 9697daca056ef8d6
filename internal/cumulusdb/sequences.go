package cumulusdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deadletter/deadletter/internal/recovery"
)

// The keys the database fills. A write never supplies a cumulus_id: the
// column's default draws it from a sequence. A sequence moved back
// (setval('files_cumulus_id_seq', 1, false), a restore that left the
// sequences behind the rows) hands out ids its table already holds: v21's
// primary keys then refuse every later row (23505, which names no
// column), and v22's, whose primary keys also carry a partition key
// ((cumulus_id, collection_cumulus_id) of granules), take a granule under
// the cumulus_id of another collection's granule. Neither is a message's
// doing: the run stops with the object in place, and says which sequence
// is behind and how to move it on.

// SequenceBehind is a sequence a write draws ids from that would hand out
// one its table already holds (or, Next nil, one whose position could not
// be read: the role has USAGE but not SELECT on it and it was never read
// in a session).
type SequenceBehind struct {
	Sequence      string // schema-qualified, as pg_get_serial_sequence names it
	Table, Column string
	Next          *string // the value nextval returns next (numeric text)
	Largest       string  // the table's largest value of the column
	// Ahead: it is ahead now, though it gave a value its table held (the
	// write that met the row drew it past).
	Ahead bool
}

func (s SequenceBehind) String() string {
	fix := fmt.Sprintf("run SELECT setval('%s', (SELECT max(%s) FROM %s))", s.Sequence, s.Column, s.Table)
	if s.Ahead {
		return fmt.Sprintf("sequence %s gave a %s that %s already holds (it is at %s now, %s' largest %s is %s): %s",
			s.Sequence, s.Column, s.Table, deref(s.Next), s.Table, s.Column, s.Largest, fix)
	}
	at := "behind"
	if s.Next != nil {
		at = "at " + *s.Next + ", behind"
	}
	return fmt.Sprintf("sequence %s is %s %s' largest %s %s: %s", s.Sequence, at, s.Table, s.Column, s.Largest, fix)
}

// SequenceBehindError: a key the database fills is one its table already
// holds. Found before the run (Cause nil), nothing was moved; found by a
// write (Cause, the write's error), the run stops with the object in
// place and no message is blamed.
type SequenceBehindError struct {
	Behind []SequenceBehind
	// Key is the key the write met, when it was not a sequence's (a
	// default of another kind), or none was found behind: table.constraint.
	Key   string
	Cause error
}

func (e *SequenceBehindError) Unwrap() error { return e.Cause }

func (e *SequenceBehindError) Error() string {
	var parts []string
	for _, s := range e.Behind {
		parts = append(parts, s.String())
	}
	what := strings.Join(parts, "; ")
	if what == "" {
		what = "a key the database fills (" + e.Key + ", from its column's default) already holds the value it gave: check the column's default and its sequence"
	}
	if e.Cause == nil {
		return "PostgreSQL: " + what + " (found before the run; nothing was moved)"
	}
	met := "a write met a key the database fills"
	var pgErr *pgconn.PgError
	var taken *idTaken
	switch {
	case errors.As(e.Cause, &taken):
		met += " (" + taken.Error() + ")"
	case errors.As(e.Cause, &pgErr) && pgErr.Code == "23505":
		met += fmt.Sprintf(" (SQLSTATE %s on %s)", pgErr.Code, pgErr.ConstraintName)
	case errors.As(e.Cause, &pgErr):
		met = fmt.Sprintf("a write failed (SQLSTATE %s) after the catalog changed under the run, with a sequence behind", pgErr.Code)
	}
	return "PostgreSQL: " + what + "; " + met +
		", so no message is blamed for it and nothing more is moved: run again once the sequence is ahead"
}

// serialColumns are the columns whose values the writes draw from a
// sequence, by table: the cumulus_id of each table they insert into.
func serialColumns() (tables, columns []string) {
	for _, t := range serialTables {
		tables, columns = append(tables, t), append(columns, "cumulus_id")
	}
	return tables, columns
}

// sequencesBehind reads, in one query, where the sequence of each
// table.column (pairwise) stands against the largest value its table
// holds, and returns those behind (all: every one, those ahead marked
// so). Columns without a sequence are left out. The sequence's position is read with SELECT on it (last_value and
// is_called); with USAGE alone, pg_sequence_last_value, which knows
// nothing of a sequence never read since setval(…, false): such a one is
// taken as ahead. The tables and sequences are read by name through
// query_to_xml, so one round trip serves them all.
func sequencesBehind(ctx context.Context, q querier, tables, columns []string, all bool) ([]SequenceBehind, error) {
	rows, err := q.Query(ctx, `SELECT t.tab, t.col, s.seq, v.nextv::text, m.largest::text, v.nextv > m.largest
FROM unnest($1::text[], $2::text[]) AS t(tab, col)
CROSS JOIN LATERAL (SELECT `+serialSequenceSQL("t.tab", "t.col")+` AS seq) s
CROSS JOIN LATERAL (SELECT q.seqincrement AS inc FROM pg_sequence q WHERE q.seqrelid = s.seq::regclass) i
CROSS JOIN LATERAL (SELECT CASE WHEN has_sequence_privilege(s.seq, 'SELECT') THEN
    (xpath('/row/v/text()', query_to_xml(format('SELECT CASE WHEN is_called THEN last_value::numeric + %s ELSE last_value END AS v FROM %s', i.inc, s.seq), false, true, '')))[1]::text::numeric
  ELSE pg_sequence_last_value(s.seq::regclass)::numeric + i.inc END AS nextv) v
CROSS JOIN LATERAL (SELECT (xpath('/row/m/text()', query_to_xml(format('SELECT max(%I) AS m FROM %I', t.col, t.tab), false, true, '')))[1]::text::numeric AS largest) m
WHERE s.seq IS NOT NULL AND i.inc > 0 AND m.largest IS NOT NULL AND ($3 OR v.nextv <= m.largest)`, tables, columns, all)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SequenceBehind
	for rows.Next() {
		var s SequenceBehind
		var ahead *bool
		if err := rows.Scan(&s.Table, &s.Column, &s.Sequence, &s.Next, &s.Largest, &ahead); err != nil {
			return nil, err
		}
		s.Ahead = ahead != nil && *ahead
		out = append(out, s)
	}
	return out, rows.Err()
}

// CheckSequences is the check before a run: every sequence the writes
// draw from is ahead of its table's largest id. A *SequenceBehindError
// names each one behind and the setval that moves it on.
func CheckSequences(ctx context.Context, q querier) error {
	tables, columns := serialColumns()
	behind, err := sequencesBehind(ctx, q, tables, columns, false)
	if err != nil {
		return err
	}
	if len(behind) > 0 {
		return &SequenceBehindError{Behind: behind}
	}
	return nil
}

// filledKey is what the catalog says of the unique key a 23505 names
// (pgErr's constraint, on the relation it names: a partition is its
// table): the columns of it that the database fills itself, those with a
// default, an identity or a generation expression that no write
// supplies, and the table they are of. No columns: the key is filled by
// the writes, and its violation the message's (or a race's).
type filledKey struct {
	table string
	cols  []string
}

// keyFilled reads the filledKey of pgErr (once per key; ok false when the
// catalog could not be read).
func (d *DB) keyFilled(ctx context.Context, pgErr *pgconn.PgError) (filledKey, bool) {
	if pgErr.ConstraintName == "" || pgErr.TableName == "" {
		return filledKey{}, true
	}
	k := pgErr.SchemaName + "\x00" + pgErr.TableName + "\x00" + pgErr.ConstraintName
	if d.keys != nil {
		if v, ok := d.keys.Load(k); ok {
			return v.(filledKey), true
		}
	}
	rows, err := d.q.Query(ctx, `SELECT r.relname::text, a.attname::text,
  ra.atthasdef OR ra.attidentity <> '' OR ra.attgenerated <> ''
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_class r ON r.oid = coalesce(pg_partition_root(c.oid), c.oid)
JOIN pg_index x ON x.indrelid = c.oid AND x.indisunique
JOIN pg_class i ON i.oid = x.indexrelid AND i.relname = $3
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (x.indkey::int2[]) AND a.attnum > 0
JOIN pg_attribute ra ON ra.attrelid = r.oid AND ra.attname = a.attname
WHERE c.relname = $1 AND ($2 = '' OR n.nspname = $2)`, pgErr.TableName, pgErr.SchemaName, pgErr.ConstraintName)
	if err != nil {
		return filledKey{}, false
	}
	defer rows.Close()
	var fk filledKey
	for rows.Next() {
		var t, col string
		var filled bool
		if err := rows.Scan(&t, &col, &filled); err != nil {
			return filledKey{}, false
		}
		if filled && !filledBy(d.gen, t, col) {
			fk.table, fk.cols = t, append(fk.cols, col)
		}
	}
	if rows.Err() != nil {
		return filledKey{}, false
	}
	if d.keys != nil {
		d.keys.Store(k, fk)
	}
	return fk, true
}

// isRace is IsRace, but for a unique violation on a key the database
// fills: no other writer can make that one (a sequence never gives a
// value twice), and retrying would only draw the sequence on past the
// rows it meets.
func (d *DB) isRace(ctx context.Context, err error) bool {
	if !IsRace(err) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		fk, _ := d.keyFilled(ctx, pgErr)
		return len(fk.cols) == 0
	}
	return true
}

// sequenceFault judges a 23505 of d's writes: on a key whose column the
// database fills, it is the environment's, and the error names the
// sequence (read then). nil: the key is the message's (or the catalog
// could not be read, and PostgreSQL's verdict stands).
func (d *DB) sequenceFault(ctx context.Context, err error, pgErr *pgconn.PgError) error {
	fk, ok := d.keyFilled(ctx, pgErr)
	if !ok || len(fk.cols) == 0 {
		return nil
	}
	return d.sequenceError(ctx, fk.table, fk.cols, fk.table+"."+pgErr.ConstraintName, err)
}

// sequenceError is the stop of a write that met a key the database fills
// (cause): the sequences of table's cols that are behind, read now.
func (d *DB) sequenceError(ctx context.Context, table string, cols []string, key string, cause error) error {
	tables := make([]string, len(cols))
	for i := range cols {
		tables[i] = table
	}
	behind, _ := sequencesBehind(ctx, d.q, tables, cols, true)
	return &recovery.TransientError{Err: &SequenceBehindError{Behind: behind, Key: key, Cause: cause}}
}

// serialSequenceSQL is the SQL of the sequence whose values the column
// col (SQL text) of table tab (SQL text, a name quote_ident quotes) takes:
// the one pg_get_serial_sequence names, or, when the sequence is OWNED BY
// NONE (pg_get_serial_sequence is NULL then), the one its default draws
// from (the default's dependency on it). NULL: the column takes no
// sequence's values.
func serialSequenceSQL(tab, col string) string {
	return `coalesce(pg_get_serial_sequence(quote_ident(` + tab + `), ` + col + `), (SELECT quote_ident(n.nspname) || '.' || quote_ident(s.relname)
  FROM pg_attrdef ad
  JOIN pg_attribute a ON a.attrelid = ad.adrelid AND a.attnum = ad.adnum
  JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid AND d.refclassid = 'pg_class'::regclass
  JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
  JOIN pg_namespace n ON n.oid = s.relnamespace
  WHERE ad.adrelid = to_regclass(quote_ident(` + tab + `)) AND a.attname = ` + col + ` LIMIT 1))`
}

// takenPrefix starts the first column of v22's granule and execution
// statements when the cumulus_id drawn for a new row names another row
// of its table already (then no row is written): "taken <cumulus_id>".
const takenPrefix = "taken "

// idTaken is the write of a new granule or execution refused because the
// cumulus_id its sequence gave names another row of the table already
// (v22, where the primary keys (cumulus_id, collection_cumulus_id) and
// (cumulus_id, created_at) would take it).
type idTaken struct{ table, id string }

// takenRow is what a row of table is called in an idTaken.
var takenRow = map[string]string{"granules": "granule", "executions": "execution"}

func (e *idTaken) Error() string {
	row := takenRow[e.table]
	return "the cumulus_id " + e.id + " drawn for a new " + row + " names another " + row + " already"
}

// takenID reads the first column of a statement writing into table: the
// drawn cumulus_id that another row holds, if that is what it says.
func takenID(table string, other *string) (*idTaken, bool) {
	if other == nil {
		return nil, false
	}
	id, ok := strings.CutPrefix(*other, takenPrefix)
	if _, err := strconv.ParseInt(id, 10, 64); !ok || err != nil {
		return nil, false
	}
	return &idTaken{table: table, id: id}, true
}

// takenError is the stop of a write whose drawn id was taken.
func (d *DB) takenError(ctx context.Context, t *idTaken) error {
	return d.sequenceError(ctx, t.table, []string{"cumulus_id"}, t.table+"."+t.table+"_pkey", t)
}

// sequencesAfterStampMoved checks the sequences again when the catalog's
// stamp moved under the run and the schema compared the same (a table
// recreated with its rows, a default pointed at another sequence are
// changes; a new partition is not): err is the write's error, blamed on
// the environment when a sequence is behind. nil: none is.
func (d *DB) sequencesAfterStampMoved(ctx context.Context, err error) error {
	tables, columns := serialColumns()
	behind, cerr := sequencesBehind(ctx, d.q, tables, columns, false)
	if cerr != nil || len(behind) == 0 {
		return nil
	}
	return &recovery.TransientError{Err: &SequenceBehindError{Behind: behind, Cause: err}}
}

// currentStamp is the stamp the watch compares against now.
func (w *schemaWatch) currentStamp() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stamp
}
