package cumulusdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// existsQueries look a record up by the natural key a message or an error
// text names. The tables and columns are the same in v21 and v22.
var existsQueries = map[string]string{
	"provider":        `SELECT EXISTS (SELECT 1 FROM providers WHERE name = $1)`,
	"collection":      `SELECT EXISTS (SELECT 1 FROM collections WHERE name = $1 AND version = $2)`,
	"execution":       `SELECT EXISTS (SELECT 1 FROM executions WHERE arn = $1)`,
	"pdr":             `SELECT EXISTS (SELECT 1 FROM pdrs WHERE name = $1)`,
	"granule":         `SELECT EXISTS (SELECT 1 FROM granules WHERE granule_id = $1)`,
	"async operation": `SELECT EXISTS (SELECT 1 FROM async_operations WHERE id::text = $1)`,
}

// Exists reports whether the record of a kind ("provider", "collection"
// as name___version, "execution" by ARN, "pdr", "granule", "async
// operation") exists now. It only reads.
func Exists(ctx context.Context, pool *pgxpool.Pool, kind, name string) (bool, error) {
	q, ok := existsQueries[kind]
	if !ok {
		return false, fmt.Errorf("no lookup for a %s", kind)
	}
	args := []any{name}
	if kind == "collection" {
		n, v, found := strings.Cut(name, "___")
		if !found {
			return false, nil
		}
		args = []any{n, v}
	}
	var exists bool
	if err := pool.QueryRow(ctx, q, args...).Scan(&exists); err != nil {
		return false, fmt.Errorf("looking up %s %q: %w", kind, name, err)
	}
	return exists, nil
}

// GranuleInCollection reports whether a granule exists in the collection
// of a cumulus_id: the lookup Cumulus's own error names for a granule
// (updateGranuleStatusToFailed's), the same in v21 and v22. By granule_id
// alone (Exists), a granule of another collection would say it exists.
// It only reads.
func GranuleInCollection(ctx context.Context, pool *pgxpool.Pool, granuleID, collectionCumulusID string) (bool, error) {
	var exists bool
	err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM granules WHERE granule_id = $1 AND collection_cumulus_id::text = $2)`,
		granuleID, collectionCumulusID).Scan(&exists)
	if err != nil {
		return false, fmt.Errorf("looking up granule %q in collection_cumulus_id %s: %w", granuleID, collectionCumulusID, err)
	}
	return exists, nil
}
