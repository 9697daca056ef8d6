package cumulusdb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Database is a Cumulus database ready for the writes: its pool, the
// schema generation read from its catalog, and the name it is shown by.
type Database struct {
	Pool       *pgxpool.Pool
	Generation Generation
	Target     string // postgres://user@host:port/db, never the password
	// Schema is the schema's fingerprint when the run began: an error
	// that a change of it could explain is checked against it (DB).
	Schema Fingerprint
	// Stamp is the catalog's stamp when Schema was read: while it stays
	// the same, the schema is (stamp).
	Stamp string
}

// Open is the one setup of `dla recover` and the db-writer processor:
// connect, read the schema generation from the catalog, and check that
// the database can take the writes (not read-only, the privileges). Each
// failure comes before any object or message is touched; a connection
// failure names PostgreSQL, the host and the database (Explain), an
// unknown or half-migrated schema is a *SchemaError, a database that
// cannot take the writes a *NotWritableError.
func Open(ctx context.Context, cfg *pgxpool.Config) (*Database, error) {
	target := Target(cfg)
	cfg = withoutJIT(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", target, err)
	}
	gen, err := Detect(ctx, oneShot{pool})
	if err == nil && gen.Partitioned() {
		// v22's statements touch every partition of a table; planned
		// afresh at each execution (PostgreSQL's choice for them) the
		// planning costs more than the execution. Their generic plans
		// prune partitions at run time and look rows up by index: 2,000
		// messages into an empty v22.3 database took 6.2 s instead of 9.4 s,
		// and again into the filled one 12.5 s instead of 20.6 s
		// (docs/performance.md). The pool is opened again with the setting.
		pool.Close()
		cfg = cfg.Copy()
		if cfg.ConnConfig.RuntimeParams == nil {
			cfg.ConnConfig.RuntimeParams = map[string]string{}
		}
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			return nil, fmt.Errorf("connecting to %s: %w", target, err)
		}
	}
	if err == nil {
		err = CheckWritable(ctx, oneShot{pool}, gen, target)
	}
	if err == nil {
		err = CheckSequences(ctx, oneShot{pool})
	}
	var schema Fingerprint
	var st string
	if err == nil {
		// The stamp first: a change between the two reads moves it, and
		// the first comparison then reads the fingerprint again.
		if st, err = stamp(ctx, oneShot{pool}); err == nil {
			schema, err = fingerprint(ctx, oneShot{pool})
		}
	}
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &Database{Pool: pool, Generation: gen, Target: target, Schema: schema, Stamp: st}, nil
}

// oneShot sends each query in one round trip, not two: without preparing
// it first (pgx.QueryExecModeExec), for the queries Open makes once. On a
// database 20 ms away Open took 17 round trips, 0.35 s, before the first
// object was read; prepared, each of its eight queries took two.
type oneShot struct{ q querier }

func (o oneShot) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return o.q.Exec(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}

func (o oneShot) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return o.q.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}

func (o oneShot) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return o.q.QueryRow(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
}

func (o oneShot) Begin(ctx context.Context) (pgx.Tx, error) { return o.q.Begin(ctx) }

// DB is the write adapter of the database's generation.
func (d *Database) DB() *DB { return NewFor(d.Pool, d.Generation).Watch(d.Schema, d.Stamp) }

// Close closes the pool.
func (d *Database) Close() { d.Pool.Close() }
