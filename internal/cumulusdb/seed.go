package cumulusdb

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Seed is the reference data the writes look up: the shape of the
// fixtures' _fixtures/seed.json.
type Seed struct {
	Collections []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		// CMRProvider and MetricsProvider are v22's (NOT NULL there);
		// DefaultProvider when the seed has none.
		CMRProvider     string `json:"cmr_provider"`
		MetricsProvider string `json:"metrics_provider"`
	} `json:"collections"`
	Providers []struct {
		Name     string `json:"name"`
		Protocol string `json:"protocol"`
		Host     string `json:"host"`
	} `json:"providers"`
	AsyncOperations []struct {
		ID            string `json:"id"`
		OperationType string `json:"operation_type"`
		Status        string `json:"status"`
		Description   string `json:"description"`
	} `json:"asyncOperations"`
	ParentExecutions []struct {
		Arn          string  `json:"arn"`
		WorkflowName string  `json:"workflow_name"`
		Status       string  `json:"status"`
		CreatedAt    float64 `json:"created_at"`
		CollectionID string  `json:"collectionId"`
	} `json:"parentExecutions"`
}

// ParseSeed reads a seed file's JSON.
func ParseSeed(b []byte) (*Seed, error) {
	var s Seed
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	return &s, nil
}

// ApplySeed inserts the seed's rows in one transaction (for databases the
// project creates: tests and `dla dev db-init`).
func ApplySeed(ctx context.Context, conn interface {
	Begin(context.Context) (pgx.Tx, error)
}, s *Seed, region string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	var cmrCol, metricsCol bool
	if err := tx.QueryRow(ctx, `SELECT
  EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('collections') AND attname = 'cmr_provider' AND NOT attisdropped),
  EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('collections') AND attname = 'metrics_provider' AND NOT attisdropped)`).Scan(&cmrCol, &metricsCol); err != nil {
		return err
	}
	for _, c := range s.Collections {
		cols, vals := "", ""
		args := []any{c.Name, c.Version}
		if cmrCol {
			cols, vals = cols+", cmr_provider", vals+", $3"
			args = append(args, orDefault(c.CMRProvider))
		}
		if metricsCol {
			cols, vals = cols+", metrics_provider", vals+fmt.Sprintf(", $%d", len(args)+1)
			args = append(args, orDefault(c.MetricsProvider))
		}
		if _, err := tx.Exec(ctx, `INSERT INTO collections (name, version, sample_file_name, granule_id_validation_regex,
  granule_id_extraction_regex, files`+cols+`) VALUES ($1, $2, 'sample', '^.*$', '(.*)', '[]'`+vals+`) ON CONFLICT DO NOTHING`, args...); err != nil {
			return fmt.Errorf("collection %s___%s: %w", c.Name, c.Version, err)
		}
	}
	for _, p := range s.Providers {
		if _, err := tx.Exec(ctx, `INSERT INTO providers (name, protocol, host) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			p.Name, p.Protocol, p.Host); err != nil {
			return fmt.Errorf("provider %s: %w", p.Name, err)
		}
	}
	for _, a := range s.AsyncOperations {
		if _, err := tx.Exec(ctx, `INSERT INTO async_operations (id, description, operation_type, status) VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING`, a.ID, a.Description, a.OperationType, a.Status); err != nil {
			return fmt.Errorf("async operation %s: %w", a.ID, err)
		}
	}
	if region == "" {
		region = "us-east-1"
	}
	// Parent executions as the fixtures' seeder wrote them: updated_at and
	// timestamp at a fixed date before the archive.
	seeded := time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, e := range s.ParentExecutions {
		created := time.UnixMilli(int64(e.CreatedAt)).UTC()
		if _, err := tx.Exec(ctx, `INSERT INTO executions (arn, url, status, workflow_name, created_at, updated_at, "timestamp", collection_cumulus_id)
VALUES ($1, $2, $3, $4, $5, $6, $6, (SELECT cumulus_id FROM collections WHERE name || '___' || version = $7))
ON CONFLICT DO NOTHING`, e.Arn,
			"https://console.aws.amazon.com/states/home?region="+region+"#/executions/details/"+e.Arn,
			e.Status, e.WorkflowName, created, seeded, e.CollectionID); err != nil {
			return fmt.Errorf("execution %s: %w", e.Arn, err)
		}
	}
	return tx.Commit(ctx)
}

// DefaultProvider is a seeded collection's CMR and metrics provider on v22
// when the seed names none.
const DefaultProvider = "CUMULUS"

func orDefault(s string) string {
	if s == "" {
		return DefaultProvider
	}
	return s
}
