package dlarecover

import "github.com/jackc/pgx/v5/pgxpool"

// DatabaseConfig is the configuration the run's database was opened with
// (the connection string, or the secret applied to it): for the audit
// record's host, port and name. It holds the password: never print it.
func (s *Session) DatabaseConfig() *pgxpool.Config { return s.path.Database.Pool.Config() }

// Generation is the Cumulus schema generation the run writes (v21, v22.0 ...).
func (s *Session) Generation() string { return string(s.path.Database.Generation) }
