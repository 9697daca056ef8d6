// Package athenasql builds the Trino SQL that searches the Dead Letter
// Archive through Athena: the partition-projected Glue table Cumulus deploys
// (tf-modules/monitoring/dla.tf), with one row per object in a date folder
// under sqs/. It is pure: no SDK, no network.
//
// Every value from the command line becomes a quoted string literal with its
// quotes doubled; values Trino cannot hold (NUL, invalid UTF-8) and regular
// expressions that do not compile are refused, never altered.
package athenasql

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/deadletter/deadletter/internal/dla"
)

// Names are the Glue database and table and the Athena workgroup.
type Names struct {
	Database, Table, Workgroup string
}

// NamesFor returns the names Cumulus gives a stack's DLA resources: the
// stack prefix with '-' replaced by '_'.
func NamesFor(stack string) Names {
	p := strings.ReplaceAll(stack, "-", "_")
	return Names{Database: p + "_glue_database", Table: p + "_dla_glue_table", Workgroup: p + "_athena_workgroup"}
}

// Query is what a search selects. Statuses are upper-case Step Functions
// statuses or "none" (no status); Collections, Executions and StateMachines
// take the same forms as local search (an ARN or a name; name___version or a
// name for every version). From and To are inclusive YYYY-MM-DD dates and
// both are required: a query never scans the whole archive by accident.
type Query struct {
	Granules, Collections, Executions, Statuses, StateMachines []string
	Error                                                      string // regular expression
	From, To                                                   string
	Limit                                                      int // 0: none
}

// ErrValue is wrapped by every refusal of a value.
var ErrValue = errors.New("value cannot be searched with Athena")

var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// nameRE is what a Glue database or table name may be: Glue lower-cases
// names and allows letters, digits and underscores (Cumulus's are
// <prefix>_dla_glue_table).
// Compiled on first use: a bounded repeat compiles into a long program,
// which every dla command paid for at start-up.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_]{1,255}$`) })

// Literal quotes s as a Trino string literal.
func Literal(s string) (string, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return "", fmt.Errorf("%q: %w: it holds a NUL byte", s, ErrValue)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%q: %w: it is not valid UTF-8", s, ErrValue)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
}

// Identifier quotes a Glue database or table name.
func Identifier(s string) (string, error) {
	if !nameRE().MatchString(s) {
		return "", fmt.Errorf("%q: not a Glue name (letters, digits and underscores)", s)
	}
	return `"` + strings.ToLower(s) + `"`, nil
}

// Search builds the query whose rows are the keys ("$path") of the matching
// objects, in the order local search prints them: date folder, then key.
func Search(q Query, n Names) (string, error) {
	fromWhere, err := fromWhere(q, n)
	if err != nil {
		return "", err
	}
	sql := `SELECT "$path" AS path, eventdate` + fromWhere + "\nORDER BY eventdate, \"$path\""
	if q.Limit > 0 {
		sql += "\nLIMIT " + strconv.Itoa(q.Limit)
	}
	return sql, nil
}

// From is the qualified table name.
func From(n Names) (string, error) {
	db, err := Identifier(n.Database)
	if err != nil {
		return "", fmt.Errorf("Glue database %w", err)
	}
	table, err := Identifier(n.Table)
	if err != nil {
		return "", fmt.Errorf("Glue table %w", err)
	}
	return db + "." + table, nil
}

// Where builds the WHERE clause: every filter must hold, any value of one
// filter may.
func Where(q Query) (string, error) {
	if !dateRE.MatchString(q.From) || !dateRE.MatchString(q.To) {
		return "", fmt.Errorf("Athena search needs a date range (--from and --to, or --date), not %q to %q", q.From, q.To)
	}
	if q.From > q.To {
		return "", fmt.Errorf("--from %s is after --to %s", q.From, q.To)
	}
	if q.Limit < 0 {
		return "", fmt.Errorf("--limit must not be negative")
	}
	w := &where{}
	w.add("eventdate BETWEEN %s AND %s", q.From, q.To)
	// Each filter reads its hoisted column, or, where the object has none
	// (a raw SQS record Cumulus v18.3-v20 wrote into a date folder, or a
	// record whose hoisting failed), the text of its body: a superset that
	// dla narrows by decoding every object Athena returns.
	w.any(q.Granules, func(g string) {
		w.term("contains(granules, %s)", g)
		w.inBody("granules", g)
	})
	w.any(q.Collections, func(c string) {
		name, _, versioned := strings.Cut(c, "___")
		if versioned {
			w.term("collectionid = %s", c)
		} else { // a name alone: every version
			w.term("starts_with(collectionid, %s)", c+"___")
		}
		w.inBody("collectionid", name) // a message holds the name and the version apart
	})
	// An ARN, or the name after its last ':' or '/', as local search reads it.
	w.any(q.Executions, func(e string) {
		w.term(`(executionarn = %s OR regexp_extract(executionarn, '[^:/]*$') = %s)`, e, e)
		w.inBody("executionarn", lastToken(e))
	})
	w.any(q.StateMachines, func(s string) {
		w.term(`(statemachinearn = %s OR regexp_extract(statemachinearn, '[^:/]*$') = %s)`, s, s)
		w.inBody("statemachinearn", lastToken(s))
	})
	w.any(q.Statuses, func(s string) {
		if strings.EqualFold(s, "none") {
			w.raw("(status IS NULL OR status = '')")
		} else {
			// A message may spell a status its own way (Cumulus's
			// "completed"): every object without the column is a candidate.
			w.term("upper(status) = %s", strings.ToUpper(s))
			w.raw("status IS NULL")
		}
	})
	if q.Error != "" {
		if _, err := regexp.Compile(q.Error); err != nil {
			return "", fmt.Errorf("--error %q: %w: the expression does not compile: %v", q.Error, ErrValue, err)
		}
		w.add("(regexp_like(error, %s) OR (error IS NULL AND status IS NULL))", q.Error)
	}
	if w.err != nil {
		return "", w.err
	}
	return strings.Join(w.clauses, "\n  AND "), nil
}

// where collects clauses; the first refused value stops it.
type where struct {
	clauses []string
	terms   []string // the alternatives of the filter being built
	err     error
}

func (w *where) format(format string, values ...string) string {
	args := make([]any, len(values))
	for i, v := range values {
		lit, err := Literal(v)
		if err != nil && w.err == nil {
			w.err = err
		}
		args[i] = lit
	}
	return fmt.Sprintf(format, args...)
}

func (w *where) add(format string, values ...string) {
	w.clauses = append(w.clauses, w.format(format, values...))
}

func (w *where) term(format string, values ...string) {
	w.terms = append(w.terms, w.format(format, values...))
}

func (w *where) raw(clause string) { w.terms = append(w.terms, clause) }

// inBody is the term for an object without column: its body holds the
// needle (or, for a needle JSON may escape, any such object).
func (w *where) inBody(column, needle string) {
	if needle != "" && dla.JSONSafe(needle) {
		w.term("("+column+" IS NULL AND strpos(body, %s) > 0)", needle)
	} else {
		w.raw("(" + column + " IS NULL AND body IS NOT NULL)")
	}
}

// lastToken is what follows the last ':' or '/' (an ARN's name).
func lastToken(s string) string { return s[strings.LastIndexAny(s, ":/")+1:] }

// any adds one clause that holds when any value's term does.
func (w *where) any(values []string, term func(string)) {
	if len(values) == 0 {
		return
	}
	w.terms = nil
	for _, v := range values {
		term(v)
	}
	if len(w.terms) == 1 {
		w.clauses = append(w.clauses, w.terms[0])
	} else {
		w.clauses = append(w.clauses, "("+strings.Join(w.terms, " OR ")+")")
	}
}

// StatsColumns are the columns Stats can group by, by dla stats's --by
// name. error groups by the whole error text; the caller folds the texts
// into classes. generation is not a column: only decoding tells it.
var StatsColumns = map[string]string{"date": "eventdate", "status": "status", "collection": "collectionid", "error": "error"}

// Stats builds the query that counts the matching objects by one column:
// rows of (value, count), the value NULL where the column is.
func Stats(q Query, n Names, by string) (string, error) {
	col, ok := StatsColumns[by]
	if !ok {
		return "", fmt.Errorf("--by %s cannot be counted by Athena (date, status, collection or error)", by)
	}
	if q.Limit != 0 {
		return "", fmt.Errorf("--limit does not apply to Athena counts")
	}
	fromWhere, err := fromWhere(q, n)
	if err != nil {
		return "", err
	}
	return "SELECT " + col + " AS value, count(*) AS objects" + fromWhere + "\nGROUP BY " + col + "\nORDER BY " + col, nil
}

// fromWhere is the FROM and WHERE clauses every query has.
func fromWhere(q Query, n Names) (string, error) {
	where, err := Where(q)
	if err != nil {
		return "", err
	}
	from, err := From(n)
	if err != nil {
		return "", err
	}
	return "\nFROM " + from + "\nWHERE " + where, nil
}

// TriageColumns are the columns of Triage's rows.
var TriageColumns = []string{"error", "collectionid", "providerid", "eventdate", "objects", "example"}

// Triage builds dla triage's query: the matching objects grouped by error
// text, collection, provider and date folder, with their count and the
// first key of each; the error classes and verdicts are made from the
// rows (dla.ErrorClass, triage.ClassifyDLA).
func Triage(q Query, n Names) (string, error) {
	if q.Limit != 0 {
		return "", fmt.Errorf("--limit does not apply to triage")
	}
	fromWhere, err := fromWhere(q, n)
	if err != nil {
		return "", err
	}
	return `SELECT error, collectionid, providerid, eventdate, count(*) AS objects, min("$path") AS example` + fromWhere +
		"\nGROUP BY error, collectionid, providerid, eventdate\nORDER BY eventdate, example", nil
}

// TriageRow is one row of Triage's query.
type TriageRow struct {
	Error, Collection, Provider, Date string // "" where the column is NULL
	N                                 int
	Path                              string // the first object's "$path"
}

// ParseTriageRow reads a row of Triage's query (TriageColumns).
func ParseTriageRow(row []*string) (TriageRow, error) {
	if len(row) != len(TriageColumns) || row[4] == nil || row[5] == nil {
		return TriageRow{}, fmt.Errorf("Athena returned a triage row of %d columns", len(row))
	}
	n, err := strconv.Atoi(*row[4])
	if err != nil || n < 0 {
		return TriageRow{}, fmt.Errorf("Athena returned %q as a count", *row[4])
	}
	return TriageRow{Error: text(row[0]), Collection: text(row[1]), Provider: text(row[2]), Date: text(row[3]), N: n, Path: *row[5]}, nil
}

func text(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// KeysColumns are the columns of Keys's rows.
var KeysColumns = []string{"path", "eventdate", "error"}

// MaxErrorsListed is how many bytes of error texts Keys lists in its
// query at most; past it, Keys selects every object of the dates and the
// caller sorts the rows by their error (an Athena query is at most
// 256 kB of text).
const MaxErrorsListed = 100 << 10

// Keys builds the query whose rows are the key ("$path"), date and error
// text of each object of the dates whose error is one of errs ("" stands
// for an object without one), in the order local search reads them. errs
// nil, longer than MaxErrorsListed, or holding a text that cannot be a
// literal, selects every object of the dates.
func Keys(q Query, n Names, errs []string) (string, error) {
	if q.Limit != 0 {
		return "", fmt.Errorf("--limit does not apply to a query of keys")
	}
	fromWhere, err := fromWhere(q, n)
	if err != nil {
		return "", err
	}
	size := 0
	for _, e := range errs {
		size += len(e) + 4
	}
	if len(errs) > 0 && size <= MaxErrorsListed {
		w := &where{}
		var listed []string
		for _, e := range errs {
			if e == "" {
				w.raw("error IS NULL")
				continue
			}
			listed = append(listed, w.format("%s", e))
		}
		if len(listed) > 0 {
			w.raw("error IN (" + strings.Join(listed, ", ") + ")")
		}
		// A text that cannot be a literal (a NUL byte, invalid UTF-8)
		// cannot be listed: every object of the dates, as past the limit.
		if w.err == nil {
			fromWhere += "\n  AND (" + strings.Join(w.terms, " OR ") + ")"
		}
	}
	return `SELECT "$path" AS path, eventdate, error` + fromWhere + "\nORDER BY eventdate, \"$path\"", nil
}

// KeyFromPath reads the object key out of an Athena "$path" value:
// s3://<bucket>/<key>, the key as stored (a '%', '?' or '#' in it is part
// of the key, not URL syntax). It must lie in the archive's sqs/ folder
// (sqsPrefix), the only one the table covers: any other path is an error,
// never a key to fetch or hand on.
func KeyFromPath(bucket, sqsPrefix, path string) (string, error) {
	rest, ok := strings.CutPrefix(path, "s3://")
	if !ok {
		return "", fmt.Errorf("Athena returned %q as an object path: not an s3:// path", path)
	}
	b, key, _ := strings.Cut(rest, "/")
	if b != bucket {
		return "", fmt.Errorf("Athena returned an object in bucket %s (%s), but the archive is in %s: check the Athena table", b, path, bucket)
	}
	if !strings.HasPrefix(key, sqsPrefix) || len(key) == len(sqsPrefix) {
		return "", fmt.Errorf("Athena returned %s, which is not under %s: check the Athena table", path, "s3://"+bucket+"/"+sqsPrefix)
	}
	return key, nil
}
