package cumulusdb_test

import (
	"context"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// Every pool Open makes runs with jit = off: PostgreSQL's default JIT
// compiled the schema fingerprint's catalog query at each execution (5.8
// of its 5.9 s on v22.0, PostgreSQL 15).
func TestEveryPoolRunsWithoutJIT(t *testing.T) {
	db, _ := openDB(t, testsupport.NewCumulusDatabase(t, []byte(writersSeed)))
	var jit string
	if err := db.Pool.QueryRow(context.Background(), "SHOW jit").Scan(&jit); err != nil {
		t.Fatal(err)
	}
	if jit != "off" {
		t.Errorf("jit = %s on a pool Open made, want off", jit)
	}
}
