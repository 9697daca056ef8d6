package dlarecover

import (
	"cmp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/deadletter/deadletter/internal/audit"
)

// DatabaseConfig is the configuration the run's database was opened with
// (the connection string, or the secret applied to it): for the audit
// record's host, port and name. It holds the password: never print it.
func (s *Session) DatabaseConfig() *pgxpool.Config { return s.path.Database.Pool.Config() }

// Generation is the Cumulus schema generation the run writes (v21, v22.0 ...).
func (s *Session) Generation() string { return string(s.path.Database.Generation) }

// AuditItem is the object's outcome for an audit record: its key, result,
// action and where it went, its error, its execution, and every granule id
// it names (blank ones left out), whatever became of its write.
func (o Object) AuditItem() audit.Item {
	it := audit.Item{Key: o.Key, Result: string(o.Result), Action: string(o.Action), MovedTo: o.MovedTo, Error: o.Error,
		Execution: cmp.Or(o.ExecutionArn, o.Execution)}
	add := func(id string) {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(it.Granules, id) {
			it.Granules = append(it.Granules, id)
		}
	}
	for _, g := range o.GranuleIDs {
		add(g)
	}
	for _, g := range o.Granules {
		add(g.GranuleID)
	}
	return it
}
