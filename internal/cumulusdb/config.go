package cumulusdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrConnString: the connection string does not parse.
var ErrConnString = errors.New("the database connection string cannot be parsed (it is not repeated here, as it may hold a password)")

// PoolConfig parses a connection string (a postgres:// URL or key=value
// pairs; "" reads the standard PG* environment variables) into a pool
// configuration of at most maxConns connections. Errors never repeat the
// string, which may hold a password.
func PoolConfig(connString string, maxConns int) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, ErrConnString
	}
	if maxConns > 0 {
		cfg.MaxConns = int32(maxConns)
	}
	return cfg, nil
}

// withoutJIT is cfg (a copy) with PostgreSQL's JIT compilation off for
// its connections, unless the connection string sets jit itself. No
// statement of dla gains from JIT, and two pay for it at every execution:
// the schema fingerprint (a catalog query whose estimate passes
// jit_above_cost: 5.8 s of its 5.9 s went to compiling 677 functions, on
// PostgreSQL 15 with the default jit = on) and v22's generic plans, whose
// estimates over every partition pass it too.
func withoutJIT(cfg *pgxpool.Config) *pgxpool.Config {
	if _, set := cfg.ConnConfig.RuntimeParams["jit"]; set {
		return cfg
	}
	cfg = cfg.Copy()
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	return cfg
}

// Secret is a database login as Cumulus stores it in Secrets Manager.
type Secret struct {
	Host     string          `json:"host"`
	Port     json.RawMessage `json:"port"` // a number or a string
	Username string          `json:"username"`
	Password string          `json:"password"`
	Database string          `json:"database"`
}

// ApplySecret sets host, port, user, password and database from a secret's
// JSON text on cfg.
func ApplySecret(cfg *pgxpool.Config, secretJSON []byte) error {
	var s Secret
	if err := json.Unmarshal(secretJSON, &s); err != nil {
		return errors.New("the database secret is not a JSON object with host, port, username, password and database")
	}
	if s.Host == "" || s.Username == "" || s.Database == "" {
		return errors.New("the database secret lacks host, username or database")
	}
	port := uint16(5432)
	if len(s.Port) > 0 && string(s.Port) != "null" {
		var n json.Number
		raw := s.Port
		if raw[0] == '"' {
			var str string
			_ = json.Unmarshal(raw, &str)
			raw = []byte(str)
		}
		n = json.Number(raw)
		v, err := strconv.ParseUint(n.String(), 10, 16)
		if err != nil {
			return fmt.Errorf("the database secret's port %s is not a port number", string(s.Port))
		}
		port = uint16(v)
	}
	cc := cfg.ConnConfig
	cc.Host, cc.Port, cc.User, cc.Password, cc.Database = s.Host, port, s.Username, s.Password, s.Database
	cc.Fallbacks = nil
	return nil
}

// Target names the database a configuration connects to, for the plan:
// host, port and database name; never the password.
func Target(cfg *pgxpool.Config) string {
	cc := cfg.ConnConfig
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cc.User, cc.Host, cc.Port, cc.Database)
}

// SecretReader returns a secret's text by its name or ARN (Secrets
// Manager's GetSecretValue, in the caller's adapter).
type SecretReader func(ctx context.Context, id string) ([]byte, error)

// Configure builds the pool configuration of `dla recover` and the
// db-writer processor alike: from a connection string, or from the Cumulus
// database secret secretID (read with read) when one is given.
func Configure(ctx context.Context, connString, secretID string, maxConns int, read SecretReader) (*pgxpool.Config, error) {
	cfg, err := PoolConfig(connString, maxConns)
	if err != nil || secretID == "" {
		return cfg, err
	}
	text, err := read(ctx, secretID)
	if err != nil {
		return nil, fmt.Errorf("reading the database secret %s: %w", secretID, err)
	}
	if err := ApplySecret(cfg, text); err != nil {
		return nil, fmt.Errorf("database secret %s: %w", secretID, err)
	}
	return cfg, nil
}
