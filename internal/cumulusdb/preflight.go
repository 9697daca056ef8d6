package cumulusdb

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// NotWritableError: the database cannot take the writes (read-only, or
// the role lacks privileges). Found before the first write, so nothing
// is moved: a run against it would fail every message the same way.
type NotWritableError struct {
	Target  string
	Reasons []string
}

func (e *NotWritableError) Error() string {
	return fmt.Sprintf("PostgreSQL at %s cannot take the writes: %s (nothing was moved or deleted)", e.Target, strings.Join(e.Reasons, "; "))
}

// tablePrivileges are what the writes do to each table.
var tablePrivileges = map[string][]string{
	"collections":         {"SELECT"},
	"providers":           {"SELECT"},
	"async_operations":    {"SELECT"},
	"executions":          {"SELECT", "INSERT", "UPDATE"},
	"pdrs":                {"SELECT", "INSERT", "UPDATE"},
	"granules":            {"SELECT", "INSERT", "UPDATE"},
	"files":               {"SELECT", "INSERT", "UPDATE", "DELETE"},
	"granules_executions": {"SELECT", "INSERT"},
}

// guardPrivileges: v22's triggers keep the guard tables as the writing
// role (they are not SECURITY DEFINER), so the role writes them too.
var guardPrivileges = []string{"SELECT", "INSERT", "UPDATE", "DELETE"}

// serialTables are the tables whose cumulus_id the writes draw from a
// sequence.
var serialTables = []string{"executions", "pdrs", "granules", "files"}

// CheckWritable checks what a failover or a narrow role would otherwise
// show only as every message failing: that the session is not read-only,
// and that the role holds each privilege the writes of this generation
// need (tables, guard tables, sequences). target names the database in
// the error.
func CheckWritable(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, gen Generation, target string) error {
	var reasons []string
	var readOnly string
	var recovering bool
	if err := q.QueryRow(ctx, `SELECT current_setting('transaction_read_only'), pg_is_in_recovery()`).Scan(&readOnly, &recovering); err != nil {
		return err
	}
	switch {
	case recovering:
		reasons = append(reasons, "the server is a standby in recovery (a reader endpoint, or an Aurora failover in progress): point the connection at the writer")
	case readOnly == "on":
		reasons = append(reasons, "sessions are read-only (default_transaction_read_only is on): point the connection at the writer")
	}
	need := map[string][]string{}
	for t, p := range tablePrivileges {
		need[t] = p
	}
	if gen.Partitioned() {
		for _, t := range v22Guards {
			need[t] = guardPrivileges
		}
	}
	// One round trip for every privilege: the run's start-up, once.
	var tables, privs []string
	for _, t := range sortedKeys(need) {
		for _, p := range need[t] {
			tables, privs = append(tables, t), append(privs, p)
		}
	}
	var lacks []string
	if err := q.QueryRow(ctx, `SELECT coalesce(array_agg(x.lack ORDER BY x.n), '{}') FROM (
  SELECT n, p.priv || ' on ' || p.tab AS lack
  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(tab, priv, n)
  WHERE NOT has_table_privilege(to_regclass(quote_ident(p.tab)), p.priv)
  UNION ALL
  SELECT 1000 + n, 'USAGE on ' || s.seq
  FROM unnest($3::text[]) WITH ORDINALITY AS t(tab, n),
    LATERAL (SELECT `+serialSequenceSQL("t.tab", "'cumulus_id'")+` AS seq) s
  WHERE s.seq IS NOT NULL AND NOT has_sequence_privilege(s.seq, 'USAGE')
) x`, tables, privs, serialTables).Scan(&lacks); err != nil {
		return err
	}
	if len(lacks) > 0 {
		reasons = append(reasons, "the role lacks "+strings.Join(lacks, ", ")+" (see docs/permissions.md)")
	}
	if len(reasons) > 0 {
		return &NotWritableError{Target: target, Reasons: reasons}
	}
	return nil
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
