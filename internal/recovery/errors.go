// Package recovery is the write core of `dla recover`: a port of Cumulus
// v21's sfEventSqsToDbRecords writeRecords, rule by rule. It decides what to
// write; the SQL lives in the PostgreSQL adapter (internal/cumulusdb) and
// the AWS reads behind the small interfaces in write.go, so the same core can
// run in the CLI and in a processor.
package recovery

import (
	"errors"
	"fmt"
	"strings"
)

// The error classes Cumulus v21 uses; their names head the messages so that
// an operator can match them against the DLA's own error field.

// UnmetRequirementsError: a referenced collection, async operation or parent
// execution is not in the database. Nothing was written.
type UnmetRequirementsError struct{ Missing []string }

func (e *UnmetRequirementsError) Error() string {
	return "UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL. " +
		"No records written to the database. Missing: " + strings.Join(e.Missing, "; ")
}

// MessageError is Cumulus's CumulusMessageError: the message lacks a field
// the write needs.
type MessageError struct{ Reason string }

func (e *MessageError) Error() string { return "CumulusMessageError: " + e.Reason }

// RecordDoesNotExist: a lookup by natural key found nothing.
type RecordDoesNotExist struct {
	Table string
	Key   string // e.g. {"name":"LANCE_NRT"}
}

func (e *RecordDoesNotExist) Error() string {
	return fmt.Sprintf("RecordDoesNotExist: Record in %s with identifiers %s does not exist.", e.Table, e.Key)
}

// SchemaValidationError (the API form of a granule breaks Cumulus's
// granule schema) is in schema.go.

// GranuleError is one granule's failure inside a message.
type GranuleError struct {
	GranuleID string
	Err       error
}

func (e *GranuleError) Error() string { return "granule " + e.GranuleID + ": " + e.Err.Error() }
func (e *GranuleError) Unwrap() error { return e.Err }

// AggregateError collects the granule failures of one message, as
// Cumulus's AggregateError does; the message fails when it is non-empty.
type AggregateError struct{ Errors []error }

func (e *AggregateError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		parts[i] = err.Error()
	}
	return "AggregateError: " + strings.Join(parts, " | ")
}

func (e *AggregateError) Unwrap() []error { return e.Errors }

// UnwrapError: the archive object holds no Cumulus message that can be
// written (Cumulus v21 hands such objects to writeRecords anyway and fails
// with a TypeError).
type UnwrapError struct{ Reason string }

func (e *UnwrapError) Error() string { return "not a writable Cumulus message: " + e.Reason }

// TransientError marks a failure of the database or of AWS, as opposed to a
// property of the message: the object is left where it is, so a re-run can
// retry it, instead of being moved to failed-sqs.
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// IsTransient reports whether err (or any error it wraps) is transient.
func IsTransient(err error) bool {
	var te *TransientError
	return errors.As(err, &te)
}

// Class is the error's class name, the word before the first colon in
// Cumulus's wording ("UnmetRequirementsError", "AggregateError", ...).
func Class(err error) string {
	s := err.Error()
	if i := strings.Index(s, ":"); i > 0 && !strings.ContainsAny(s[:i], " \n") {
		return s[:i]
	}
	return "Error"
}
