package cumulusdb

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// The DDL of each generation, for databases the project creates (tests,
// `dla dev db-init`): the CLI never creates or alters tables in a database
// it did not create.

// Schema is the v21 DDL.
//
//go:embed schema.sql
var Schema string

// schemaV22 is the v22.3 DDL, written from v22's migrations.
//
//go:embed schema_v22.sql
var schemaV22 string

// guardsV22_0 is the v22.0-v22.1 guard tables and triggers that replace
// v22.3's.
//
//go:embed schema_v22_guards_v22_0.sql
var guardsV22_0 string

// Tables are the tables the writes touch, in dependency order.
var Tables = []string{"collections", "providers", "async_operations", "executions", "pdrs", "granules", "files", "granules_executions"}

// Generations are the generations InitSchema creates, oldest first.
var Generations = []Generation{V21, V22, V22_2, V22_3}

// ParseGeneration reads a generation's name: v21, v22 (the newest, v22.3),
// v22.0, v22.1 (which is v22.0's schema), v22.2 or v22.3.
func ParseGeneration(s string) (Generation, error) {
	switch strings.TrimSpace(strings.ToLower(s)) {
	case "v21", "21":
		return V21, nil
	case "v22", "22", "v22.3", "22.3":
		return V22_3, nil
	case "v22.0", "22.0", "v22.1", "22.1":
		return V22, nil
	case "v22.2", "22.2":
		return V22_2, nil
	}
	return "", fmt.Errorf("unknown Cumulus schema %q: want v21, v22.0, v22.1, v22.2, v22.3 or v22 (the newest)", s)
}

// DDL is the schema of generation gen as a deploy leaves it. For v22,
// executions has a quarterly partition for each quarter of deployYear and
// the year after (as the deploy's partition procedure provisions them),
// plus the default partition.
func DDL(gen Generation, deployYear int) (string, error) {
	if gen == V21 {
		return Schema, nil
	}
	var parts strings.Builder
	for y := deployYear; y <= deployYear+1; y++ {
		for q := 1; q <= 4; q++ {
			fmt.Fprintf(&parts, "CREATE TABLE executions_%d_q%d PARTITION OF executions FOR VALUES FROM ('%d-%02d-01') TO ('%s');\n",
				y, q, y, (q-1)*3+1, quarterEnd(y, q))
		}
	}
	ddl, err := replaceLine(schemaV22, "-- @@EXECUTIONS_PARTITIONS@@", parts.String())
	if err != nil {
		return "", err
	}
	switch gen {
	case V22_3:
		return ddl, nil
	case V22, V22_2:
	default:
		return "", fmt.Errorf("no DDL for schema generation %q", gen)
	}
	guards, err := between(guardsV22_0, "-- @@BEGIN GUARDS v22.0@@", "-- @@END GUARDS v22.0@@")
	if err != nil {
		return "", err
	}
	if gen == V22_2 {
		// v22.2 keeps v22.0's guard tables and takes v22.3's granule
		// triggers (20260529151018_update_granules_uniqueness_trigger).
		v22_2, err := between(ddl, "-- granules guard triggers, v22.2+", "-- files guard trigger")
		if err != nil {
			return "", err
		}
		if guards, err = replaceBetween(guards, "-- @@BEGIN GRANULES TRIGGERS v22.0@@", "-- @@END GRANULES TRIGGERS v22.0@@", v22_2); err != nil {
			return "", err
		}
	}
	if ddl, err = replaceBetween(ddl, "-- @@BEGIN GUARDS v22.3@@", "-- @@END GUARDS v22.3@@", guards); err != nil {
		return "", err
	}
	if gen == V22 {
		// metrics_provider comes with v22.2.
		ddl = strings.Replace(ddl, "ALTER TABLE collections ADD COLUMN metrics_provider text NOT NULL;", "", 1)
		ddl = strings.Replace(ddl, "CREATE INDEX collection_metrics_provider_index ON collections (metrics_provider);", "", 1)
		if strings.Contains(ddl, "ADD COLUMN metrics_provider") {
			return "", fmt.Errorf("v22.0 DDL still names metrics_provider")
		}
	}
	return ddl, nil
}

func quarterEnd(y, q int) string {
	if q == 4 {
		return fmt.Sprintf("%d-01-01", y+1)
	}
	return fmt.Sprintf("%d-%02d-01", y, q*3+1)
}

// InitSchema creates the tables of generation gen (for databases the
// project creates).
func InitSchema(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, gen Generation, deployYear int) error {
	ddl, err := DDL(gen, deployYear)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, ddl)
	return err
}

// replaceLine replaces the one line that is exactly line.
func replaceLine(s, line, with string) (string, error) {
	if strings.Count(s, line+"\n") != 1 {
		return "", fmt.Errorf("schema marker %q not found once", line)
	}
	return strings.Replace(s, line+"\n", with, 1), nil
}

// between is the text from the line starting with begin to the line
// starting with end, both included (end excluded when it is not a marker
// of the same block: a following section's heading).
func between(s, begin, end string) (string, error) {
	i := strings.Index(s, begin)
	if i < 0 {
		return "", fmt.Errorf("schema marker %q not found", begin)
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		return "", fmt.Errorf("schema marker %q not found", end)
	}
	j += i
	if strings.HasPrefix(end, "-- @@END") {
		j += len(end)
	}
	return s[i:j], nil
}

// replaceBetween replaces the block from begin to end (both marker lines
// included) with with.
func replaceBetween(s, begin, end, with string) (string, error) {
	block, err := between(s, begin, end)
	if err != nil {
		return "", err
	}
	return strings.Replace(s, block, with, 1), nil
}
