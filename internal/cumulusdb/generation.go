package cumulusdb

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Generation is a Cumulus database schema generation: what the writes must
// look like. It is read from the database's own catalog, never assumed.
type Generation string

const (
	// V21 is Cumulus up to v21: plain tables, ON CONFLICT upserts on the
	// natural keys.
	V21 Generation = "v21"
	// V22 is Cumulus v22.0 and v22.1: partitioned executions, granules and
	// files, global uniqueness in guard tables kept by triggers, writes as
	// an insert then an update.
	V22 Generation = "v22.0"
	// V22_2 refuses a change of a granule's collection in its guard
	// trigger (the granule triggers split in three), and checks a granule's
	// other collection only after an actual unique conflict. (The
	// collections.metrics_provider column came with v22.1.1 or v22.2: it is
	// read on its own: DB.CollectionProviders.)
	V22_2 Generation = "v22.2"
	// V22_3 partitions the guard tables.
	V22_3 Generation = "v22.3"
)

// Partitioned reports whether the generation is one of v22's.
func (g Generation) Partitioned() bool { return g != V21 && g != "" }

// Releases is the Cumulus releases a generation stands for, for the plan.
func (g Generation) Releases() string {
	switch g {
	case V21:
		return "Cumulus v21 and earlier (unpartitioned tables)"
	case V22:
		return "Cumulus v22.0-v22.1 (partitioned tables)"
	case V22_2:
		return "Cumulus v22.2 (partitioned tables; a granule keeps its collection)"
	case V22_3:
		return "Cumulus v22.3 or later (partitioned tables and partitioned guard tables)"
	}
	return "unknown"
}

// SchemaError refuses a database whose schema is no generation the writes
// know, or one half migrated: nothing is read, moved or deleted.
type SchemaError struct {
	Found    string
	Expected string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the database schema is not one dla can write: found %s; expected %s (nothing was read, moved or deleted)", e.Found, e.Expected)
}

// tableShape is what the catalog says of one table.
type tableShape struct {
	exists      bool
	partitioned bool
	columns     map[string]bool
}

// v21Columns are the columns v21's statements name, per table: a v21
// database that lacks one missed a migration.
var v21Columns = map[string][]string{
	"collections":      {"cumulus_id", "name", "version"},
	"providers":        {"cumulus_id", "name"},
	"async_operations": {"cumulus_id", "id"},
	"executions": {"cumulus_id", "arn", "status", "url", "cumulus_version", "tasks", "workflow_name", "created_at",
		"timestamp", "updated_at", "error", "original_payload", "final_payload", "duration", "async_operation_cumulus_id",
		"collection_cumulus_id", "parent_cumulus_id", "archived"},
	"pdrs": {"cumulus_id", "name", "status", "pan_sent", "pan_message", "stats", "progress", "execution_cumulus_id",
		"collection_cumulus_id", "provider_cumulus_id", "created_at", "updated_at", "timestamp", "duration", "address", "original_url"},
	"granules": {"cumulus_id", "granule_id", "status", "collection_cumulus_id", "created_at", "updated_at", "published",
		"duration", "time_to_archive", "time_to_process", "product_volume", "error", "cmr_link", "pdr_cumulus_id",
		"provider_cumulus_id", "beginning_date_time", "ending_date_time", "last_update_date_time",
		"processing_end_date_time", "processing_start_date_time", "production_date_time", "query_fields",
		"timestamp", "producer_granule_id", "archived"},
	"files": {"cumulus_id", "granule_cumulus_id", "bucket", "key", "checksum_type", "checksum_value", "file_name",
		"file_size", "path", "source", "type"},
	"granules_executions": {"granule_cumulus_id", "execution_cumulus_id"},
}

// v22Columns are the columns v22 adds that its writes name: the partition
// keys the references carry.
var v22Columns = map[string][]string{
	"executions":          {"parent_created_at"},
	"pdrs":                {"execution_created_at"},
	"granules_executions": {"collection_cumulus_id", "execution_created_at"},
	"files":               {"collection_cumulus_id"},
}

// v22Partitioned are the tables v22 partitions.
var v22Partitioned = []string{"executions", "granules", "files"}

// v22Guards are v22's global-uniqueness guard tables.
var v22Guards = []string{"executions_global_unique", "granules_global_unique", "files_global_unique"}

// Detect reads the schema generation from the catalog (the tables in the
// search path, as the writes see them). A database that is not Cumulus's,
// or whose tables are of two generations or miss a column the writes
// need, is a *SchemaError.
func Detect(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}) (Generation, error) {
	names := append(append([]string{}, Tables...), v22Guards...)
	rows, err := q.Query(ctx, `SELECT t.name, c.relkind::text, coalesce(array_agg(a.attname::text) FILTER (WHERE a.attname IS NOT NULL), '{}')
FROM unnest($1::text[]) AS t(name)
LEFT JOIN pg_class c ON c.oid = to_regclass(quote_ident(t.name))
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
GROUP BY t.name, c.relkind`, names)
	if err != nil {
		return "", err
	}
	shapes := map[string]tableShape{}
	for rows.Next() {
		var name string
		var kind *string
		var cols []string
		if err := rows.Scan(&name, &kind, &cols); err != nil {
			rows.Close()
			return "", err
		}
		s := tableShape{exists: kind != nil, partitioned: kind != nil && *kind == "p", columns: map[string]bool{}}
		for _, c := range cols {
			s.columns[c] = true
		}
		shapes[name] = s
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	// A NOT NULL column without a default that no write fills (a newer
	// Cumulus's migration, as v22.0's collections.cmr_provider was): every
	// insert would fail on it, and the failures would look like the
	// messages'.
	unfilled, err := unfilledColumns(ctx, q)
	if err != nil {
		return "", err
	}
	if len(unfilled) > 0 {
		return "", &SchemaError{Found: "NOT NULL column " + strings.Join(unfilled, ", ") + " without a default, which no write of dla fills (a newer Cumulus schema?)",
			Expected: "the columns of Cumulus v21 or v22.0-v22.3"}
	}
	// The guard triggers on executions, granules and files that fire in
	// this session, with the function each calls: enabled (ALWAYS, or as
	// session_replication_role asks: a trigger enabled for replicas only
	// fires only under 'replica', an ordinary one never does there), and
	// so on every partition (a clone disabled on one partition lets the
	// rows routed there skip it).
	trows, err := q.Query(ctx, `WITH fires AS (SELECT CASE current_setting('session_replication_role') WHEN 'replica' THEN 'R' ELSE 'O' END AS mode)
SELECT c.relname::text || '.' || g.tgname, p.proname::text
FROM fires, pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid JOIN pg_proc p ON p.oid = g.tgfoid
WHERE g.tgrelid IN (to_regclass('executions'), to_regclass('granules'), to_regclass('files'))
  AND NOT g.tgisinternal AND g.tgenabled IN ('A', fires.mode)
  AND NOT EXISTS (SELECT 1 FROM pg_partition_tree(g.tgrelid) t JOIN pg_trigger k ON k.tgrelid = t.relid
    WHERE t.level > 0 AND k.tgname = g.tgname AND k.tgparentid <> 0 AND k.tgenabled NOT IN ('A', fires.mode))`)
	if err != nil {
		return "", err
	}
	triggers := map[string]string{}
	for trows.Next() {
		var name, fn string
		if err := trows.Scan(&name, &fn); err != nil {
			trows.Close()
			return "", err
		}
		triggers[name] = fn
	}
	if err := trows.Err(); err != nil {
		return "", err
	}
	gen, err := classifyShapes(shapes, triggers[granuleUpdateTrigger] != "")
	if err != nil || !gen.Partitioned() {
		return gen, err
	}
	if m := missingTriggers(gen, triggers); len(m) > 0 {
		return "", &SchemaError{Found: "Cumulus " + string(gen) + " tables without their guard trigger " + strings.Join(m, ", ") + " (dropped or disabled)",
			Expected: "every guard trigger of Cumulus " + string(gen) + ": without them the writes would leave granules, files and executions out of the global-uniqueness tables"}
	}
	return gen, nil
}

// granuleUpdateTrigger came with v22.2, which split the granules guard
// trigger in three (the update one refuses a change of collection).
const granuleUpdateTrigger = "granules.granules_enforce_unique_granule_id_trigger_update"

// guardTriggers are each v22 generation's guard triggers (table.trigger)
// and the functions they call, from Cumulus's migrations (the DDL in
// schema_v22.sql and schema_v22_guards_v22_0.sql).
var guardTriggers = func() map[Generation]map[string]string {
	split := func(table, trigger, fn string) map[string]string {
		m := map[string]string{}
		for _, op := range []string{"delete", "insert", "update"} {
			m[table+"."+trigger+"_"+op] = fn + "_" + op
		}
		return m
	}
	union := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	exec := map[string]string{"executions.executions_enforce_unique_arn_url_trigger": "executions_enforce_global_uniqueness"}
	gran := map[string]string{"granules.granules_enforce_unique_granule_id_trigger": "granules_enforce_global_uniqueness"}
	files := map[string]string{"files.files_enforce_unique_bucket_key_trigger": "files_enforce_global_uniqueness"}
	splitExec := split("executions", "executions_enforce_unique_arn_url_trigger", "executions_enforce_global_uniqueness")
	splitGran := split("granules", "granules_enforce_unique_granule_id_trigger", "granules_enforce_global_uniqueness")
	return map[Generation]map[string]string{
		V22:   union(exec, gran, files),
		V22_2: union(exec, splitGran, files),
		V22_3: union(splitExec, splitGran, files),
	}
}()

// missingTriggers are gen's guard triggers that are not there (or are
// disabled, or call another function), as "table.trigger (function)",
// sorted.
func missingTriggers(gen Generation, have map[string]string) []string {
	var m []string
	for t, fn := range guardTriggers[gen] {
		if have[t] != fn {
			m = append(m, t+" ("+fn+")")
		}
	}
	sort.Strings(m)
	return m
}

// classifyShapes is Detect's decision on what the catalog said.
func classifyShapes(shapes map[string]tableShape, splitGranuleTriggers bool) (Generation, error) {
	var missing []string
	for _, t := range Tables {
		if !shapes[t].exists {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return "", &SchemaError{Found: "no table " + strings.Join(missing, ", "),
			Expected: "Cumulus's tables (is this the Cumulus database? dla never creates tables in one it did not create)"}
	}
	var parts, plain, guards, noGuards []string
	for _, t := range v22Partitioned {
		if shapes[t].partitioned {
			parts = append(parts, t)
		} else {
			plain = append(plain, t)
		}
	}
	for _, t := range v22Guards {
		if shapes[t].exists {
			guards = append(guards, t)
		} else {
			noGuards = append(noGuards, t)
		}
	}
	if len(parts) == 0 && len(guards) == 0 {
		if m := missingColumns(shapes, v21Columns); len(m) > 0 {
			return "", &SchemaError{Found: "Cumulus v21 tables without column " + strings.Join(m, ", "),
				Expected: "every migration of Cumulus v21 applied"}
		}
		return V21, nil
	}
	if len(plain) > 0 || len(noGuards) > 0 {
		found := []string{}
		if len(parts) > 0 {
			found = append(found, "partitioned "+strings.Join(parts, ", "))
		}
		if len(plain) > 0 {
			found = append(found, "unpartitioned "+strings.Join(plain, ", "))
		}
		if len(guards) > 0 {
			found = append(found, "guard tables "+strings.Join(guards, ", "))
		}
		if len(noGuards) > 0 {
			found = append(found, "no "+strings.Join(noGuards, ", "))
		}
		return "", &SchemaError{Found: "a half-migrated schema (" + strings.Join(found, "; ") + ")",
			Expected: "either Cumulus v21 (no table partitioned, no guard table) or v22 (executions, granules and files partitioned, and the three guard tables)"}
	}
	if m := missingColumns(shapes, v21Columns, v22Columns); len(m) > 0 {
		return "", &SchemaError{Found: "Cumulus v22 tables without column " + strings.Join(m, ", "),
			Expected: "every migration of Cumulus v22 applied"}
	}
	switch {
	case shapes["granules_global_unique"].partitioned:
		return V22_3, nil
	case splitGranuleTriggers:
		return V22_2, nil
	}
	return V22, nil
}

func missingColumns(shapes map[string]tableShape, sets ...map[string][]string) []string {
	var m []string
	for _, set := range sets {
		for t, cols := range set {
			for _, c := range cols {
				if !shapes[t].columns[c] {
					m = append(m, t+"."+c)
				}
			}
		}
	}
	sort.Strings(m)
	return m
}

// WrittenColumns are the columns the writes of any generation fill, per
// table they insert into.
var WrittenColumns = map[string][]string{
	"executions": {"arn", "status", "url", "cumulus_version", "tasks", "workflow_name", "created_at", "timestamp",
		"updated_at", "error", "original_payload", "final_payload", "duration", "async_operation_cumulus_id",
		"collection_cumulus_id", "parent_cumulus_id", "parent_created_at"},
	"pdrs": {"name", "status", "pan_sent", "pan_message", "stats", "progress", "execution_cumulus_id", "execution_created_at",
		"collection_cumulus_id", "provider_cumulus_id", "created_at", "updated_at", "timestamp", "duration"},
	"granules": {"granule_id", "status", "collection_cumulus_id", "created_at", "updated_at", "published",
		"duration", "time_to_archive", "time_to_process", "product_volume", "error", "cmr_link", "pdr_cumulus_id",
		"provider_cumulus_id", "beginning_date_time", "ending_date_time", "last_update_date_time",
		"processing_end_date_time", "processing_start_date_time", "production_date_time", "query_fields",
		"timestamp", "producer_granule_id"},
	"files": {"bucket", "key", "checksum_type", "checksum_value", "file_name", "file_size", "granule_cumulus_id",
		"collection_cumulus_id", "path", "source", "type"},
	"granules_executions": {"granule_cumulus_id", "execution_cumulus_id", "collection_cumulus_id", "execution_created_at"},
}

// writtenColumn is every column some write fills, of any table.
var writtenColumn = func() map[string]bool {
	m := map[string]bool{}
	for _, cols := range WrittenColumns {
		for _, c := range cols {
			m[c] = true
		}
	}
	return m
}()

// unfilledColumns are the NOT NULL columns without a default (nor identity
// or generated) of the tables the writes insert into that no write fills,
// as table.column.
func unfilledColumns(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) ([]string, error) {
	tables := make([]string, 0, len(WrittenColumns))
	for t := range WrittenColumns {
		tables = append(tables, t)
	}
	rows, err := q.Query(ctx, `SELECT t.name, a.attname::text
FROM unnest($1::text[]) AS t(name)
JOIN pg_attribute a ON a.attrelid = to_regclass(quote_ident(t.name))
WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attnotnull AND NOT a.atthasdef
  AND a.attidentity = '' AND a.attgenerated = ''`, tables)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t, c string
		if err := rows.Scan(&t, &c); err != nil {
			return nil, err
		}
		if !slices.Contains(WrittenColumns[t], c) {
			out = append(out, t+"."+c)
		}
	}
	sort.Strings(out)
	return out, rows.Err()
}
