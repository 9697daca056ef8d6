package cumulusdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deadletter/deadletter/internal/recovery"
)

// Whose is a database error's owner: the message being written, or the
// environment it is written into.
type Whose int

const (
	// OfTheMessage: the data broke a rule (a value out of range, an
	// integrity violation that outlives the race retry, a trigger's
	// refusal). The message fails and moves to failed-sqs/, as in Cumulus.
	OfTheMessage Whose = iota
	// OfTheEnvironment: the database, its configuration or its schema
	// (unreachable, read-only, privileges, an undefined table or column, no
	// partition for the row). Every message would fail the same way: the
	// run stops with nothing more moved, and the db-writer retries.
	OfTheEnvironment
)

// messageClasses are the SQLSTATE classes that describe the data written:
// data exceptions (22), integrity violations (23), program limits a value
// exceeds (54: an index row too large) and what a trigger raises about a
// row (P0). Every other class is the environment's.
var messageClasses = map[string]bool{"22": true, "23": true, "54": true, "P0": true}

// environmentCodes are the SQLSTATEs within those classes that no message
// can cause: 2200H, a sequence at its MAXVALUE (the ids of every later row
// of its table would fail the same way).
var environmentCodes = map[string]bool{"2200H": true}

// ErrorOwner says whose a database error is, from the fields PostgreSQL
// reports (never its text, which is in the server's language). Errors
// that are not PostgreSQL's own (a lost connection, a timeout, a cancelled
// context) are the environment's. Within the classes of the data, these
// are the environment's too:
//   - a row no partition takes (23514 naming no constraint): no message
//     could pass until the partition exists;
//   - a sequence at its limit (2200H, environmentCodes);
//   - a class-23 error on a table the writes never fill, or on a column
//     of theirs that no write fills (a NOT NULL column added, or whose
//     default was dropped, after the run began): no message could ever
//     fill it.
//
// The table is the one the error names, or, for the errors of a DB's
// writes, the table a partition belongs to, read from the catalog (DB's
// classify); the columns are those the generation's writes fill.
func ErrorOwner(err error) Whose {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || len(pgErr.Code) < 2 {
		return OfTheEnvironment
	}
	if !messageClasses[pgErr.Code[:2]] || environmentCodes[pgErr.Code] || isRoutingFailure(pgErr) {
		return OfTheEnvironment
	}
	if pgErr.Code[:2] == "23" {
		table, gen := pgErr.TableName, Generation("")
		var re *resolvedError
		if errors.As(err, &re) {
			table, gen = re.rel.table, re.gen
		}
		_, written := WrittenColumns[table]
		_, guard := guardColumns[table]
		switch {
		case re != nil || written || guard:
			if !filledBy(gen, table, pgErr.ColumnName) {
				return OfTheEnvironment
			}
		case pgErr.ColumnName != "" && !writtenColumn[pgErr.ColumnName]:
			// A relation not read from the catalog (a partition's name):
			// the column alone.
			return OfTheEnvironment
		}
	}
	return OfTheMessage
}

// IsMissingPartition: the row's partition key has no partition (a v22
// executions table whose quarter was never created and that has no
// default partition). SQLSTATE 23514 like a CHECK violation, but naming
// no constraint; no message could ever pass it until the partition exists.
func IsMissingPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && isRoutingFailure(pgErr)
}

// Classify turns a database error into the error the write core expects:
// an error of the environment becomes a recovery.TransientError naming
// what to fix (the run stops, the object stays for a re-run); an error of
// the message is its text with its SQLSTATE, as the DLA records it.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if ErrorOwner(err) == OfTheEnvironment {
		return &recovery.TransientError{Err: &EnvironmentError{Err: err}}
	}
	errors.As(err, &pgErr)
	return fmt.Errorf("%s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
}

// EnvironmentError is a database failure that is not the message's: the
// line an operator reads names PostgreSQL and what to check.
type EnvironmentError struct{ Err error }

func (e *EnvironmentError) Unwrap() error { return e.Err }

func (e *EnvironmentError) Error() string {
	if line, ok := Explain(e.Err); ok {
		return line
	}
	return "PostgreSQL: " + e.Err.Error()
}

// environmentHints say what to check for the SQLSTATEs an operator meets
// when the database, not the message, is wrong.
var environmentHints = map[string]string{
	"25006": "the database is read-only (a reader endpoint, or an Aurora failover in progress): point --database-url at the writer",
	"42501": "the role lacks a privilege the writes need: see docs/permissions.md",
	"42P01": "a table the writes need is missing: is this the Cumulus database, fully migrated?",
	"42703": "a column the writes need is missing: is the Cumulus schema fully migrated?",
	"42P10": "no unique constraint matches the write's ON CONFLICT: the schema is not the generation detected",
	"42883": "a function the writes need is missing: is the Cumulus schema fully migrated?",
	"28P01": "the password was refused",
	"28000": "the role is not allowed to log in (check the user name and pg_hba.conf)",
	"3D000": "the database does not exist",
	"53300": "the server has no free connection slot: lower --concurrency or --db-max-pool",
	"57P01": "an administrator or a failover ended the session (pg_terminate_backend, a server restart or an Aurora failover): run again once the writer answers",
	"57P02": "the server crashed and ended every session: run again once it is back",
	"57P04": "the database was dropped",
	"57P05": "the server ended an idle session (idle_session_timeout)",
	"57P03": "the server is starting up or in recovery",
}

// Explain is the one line an operator reads for a database failure that is
// not about a message: a connection that failed (with PostgreSQL, the host
// and the database named, and the cause that matters first), or a
// PostgreSQL error of the environment with a hint. ok is false for any
// other error.
func Explain(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return connectLine(ce), true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if IsMissingPartition(pgErr) {
			var re *resolvedError
			errors.As(err, &re)
			var rel relation
			if re != nil {
				rel = re.rel
			}
			return missingPartitionLine(pgErr, rel), true
		}
		if ErrorOwner(err) != OfTheEnvironment {
			return "", false
		}
		line := fmt.Sprintf("PostgreSQL: %s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
		if h, ok := environmentHints[pgErr.Code]; ok {
			line += ": " + h
		}
		return line, true
	}
	return "", false
}

// connectLine names PostgreSQL, the server and the database, then the
// cause: a refusal by the server (password, role, database) before a
// network failure, and never a fallback attempt's error (pgx tries TLS
// first with sslmode=prefer; "server refused TLS connection" is not why
// the login failed).
func connectLine(ce *pgconn.ConnectError) string {
	where := "PostgreSQL"
	if c := ce.Config; c != nil {
		where = fmt.Sprintf("PostgreSQL at %s:%d, database %q, user %q", c.Host, c.Port, c.Database, c.User)
	}
	var pgErr *pgconn.PgError
	if errors.As(ce, &pgErr) {
		why := fmt.Sprintf("%s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
		if h, ok := environmentHints[pgErr.Code]; ok {
			why += ": " + h
		}
		return "cannot connect to " + where + ": " + why
	}
	var dns *net.DNSError
	if errors.As(ce, &dns) {
		return fmt.Sprintf("cannot connect to %s: the host %q does not resolve; check --database-url, PGHOST and DATABASE_URL", where, dns.Name)
	}
	var ne net.Error
	if errors.Is(ce, context.DeadlineExceeded) || (errors.As(ce, &ne) && ne.Timeout()) {
		return fmt.Sprintf("cannot connect to %s: no answer (timed out); check --database-url, PGHOST, PGPORT, the network and the security group", where)
	}
	var op *net.OpError
	if errors.As(ce, &op) {
		return fmt.Sprintf("cannot connect to %s: %v; check --database-url, PGHOST, PGPORT and that the server is running", where, op.Err)
	}
	return "cannot connect to " + where + ": " + lastLine(ce)
}

// lastLine is the last attempt's error of a connect error (the joined
// errors of every host and fallback tried, one per line).
func lastLine(ce *pgconn.ConnectError) string {
	s := ce.Error()
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}
