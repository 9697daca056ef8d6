package autorecoverfn

import (
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/workflow/autorecover"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// The function starts in report mode, reads the archive and the database
// as Cumulus's db-writer does, and names the variable that is wrong.
func TestTheFunctionsEnvironmentIsReportModeByDefaultAndNamesAWrongVariable(t *testing.T) {
	base := map[string]string{EnvArchive: "s3://bucket/stack", EnvDBSecret: "arn:aws:secretsmanager:us-east-1:1:secret:db"}
	c, err := LoadConfig(env(base))
	if err != nil || c.Mode != autorecover.ModeReport || c.Archive.Bucket != "bucket" || c.Archive.Stack != "stack" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for change, want := range map[[2]string]string{
		{EnvArchive, "/local/path"}:          `DLA_ARCHIVE="/local/path": want the archive as s3://BUCKET/STACK`,
		{EnvMode, "fix"}:                     `AUTORECOVER_MODE="fix": want report or recover`,
		{EnvLookback, "0"}:                   `AUTORECOVER_LOOKBACK_DAYS="0": not a whole number from 1 to 400`,
		{EnvMaxObjects, "lots"}:              `AUTORECOVER_MAX_OBJECTS="lots"`,
		{EnvDatabaseURL, "postgres://x@y/z"}: "set databaseCredentialSecretArn or DATABASE_URL, not both",
		{EnvDBSecret, ""}:                    "the database is not set",
		{EnvEngine, "glue"}:                  `AUTORECOVER_ENGINE="glue": want local or athena`,
	} {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		m[change[0]] = change[1]
		if _, err := LoadConfig(env(m)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%q: %v, want %q", change[0], change[1], err, want)
		}
	}
	athena := map[string]string{EnvEngine: "athena", EnvAthenaWorkgroup: "primary"}
	for k, v := range base {
		athena[k] = v
	}
	if c, err := LoadConfig(env(athena)); err != nil || c.Athena == nil || c.Athena.Workgroup != "primary" || c.Athena.Table != "stack_dla_glue_table" {
		t.Errorf("athena: %+v %v", c.Athena, err)
	}
	athena[EnvMaxScanBytes] = "10GB"
	if _, err := LoadConfig(env(athena)); err == nil || !strings.Contains(err.Error(), "AUTORECOVER_MAX_SCAN_BYTES") {
		t.Errorf("a scan limit with a unit: %v", err)
	}
	base[EnvMaxAttempts] = "0"
	if c, err := LoadConfig(env(base)); err != nil || c.MaxAttempts != -1 {
		t.Errorf("max attempts 0 (no limit): %d %v", c.MaxAttempts, err)
	}
}
