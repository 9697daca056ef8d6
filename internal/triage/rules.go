// Package triage decides, for each group of failures in the Dead Letter
// Archive or the push DLQ, whether a retry will help: retry now, fix
// something first, never as it is, or unknown. The rules are a table
// (data, documented in docs/triage.md, whose rows a test checks against
// it); grouping uses dla.ErrorClass, the one normaliser, so the group
// triage shows is the group `--error-class` selects. No I/O: the CLI reads
// the archive, the queue and the database, and builds the commands.
package triage

import (
	"math"
	"regexp"
)

// Class is a verdict's kind.
type Class string

const (
	// Transient: retrying as it is will work once the cause is gone.
	Transient Class = "transient"
	// FixFirst: a record the message needs is missing; create it, then
	// retry.
	FixFirst Class = "fix-first"
	// Permanent: it will never succeed as it is.
	Permanent Class = "permanent"
	// Unknown: no rule says; shown as such, never guessed.
	Unknown Class = "unknown"
)

// Needs says where a fix-first rule finds what is missing.
type Needs string

const (
	// NeedsNothing: not a fix-first rule.
	NeedsNothing Needs = ""
	// NeedsReferences: the message's references, one of which is missing
	// (UnmetRequirementsError names none): its collection, async operation
	// and parent execution.
	NeedsReferences Needs = "references"
	// NeedsNamedRecord: the error text names the record
	// ("Record in providers with identifiers {"name":"X"} does not exist").
	NeedsNamedRecord Needs = "named record"
	// NeedsProvider: the message's provider (a PDR's "Provider reference
	// is required").
	NeedsProvider Needs = "provider"
)

// Rule is one row of the table: the error classes it matches, the verdict,
// and why.
type Rule struct {
	ID    string
	Match *regexp.Regexp // matched against dla.ErrorClass of the error text
	Class Class
	Needs Needs
	// DLAOnly: transient for dla recover, which survives it, while
	// Cumulus's own recovery fails on it again.
	DLAOnly bool
	Why     string
}

// DLARules is the table for the archive's error texts, first match wins:
// permanent, then fix-first, then transient.
// Each row is in docs/triage.md (TestDocsListEveryRule).
var DLARules = []Rule{
	// What no retry fixes comes first: an AggregateError holding a granule
	// of another collection and a missing provider is never written as it
	// is, whatever is created; and a word like "timeout" inside a schema
	// violation's text does not make it transient.
	{ID: "granule-other-collection", Match: regexp.MustCompile(`A granule already exists for granuleId: .* with collectionId`), Class: Permanent,
		Why: "the granule id belongs to another collection; Cumulus never moves it as it is"},
	{ID: "schema-validation", Match: regexp.MustCompile(`SchemaValidationError`), Class: Permanent,
		Why: "the record the message makes breaks Cumulus's schema"},
	{ID: "not-a-cumulus-message", Match: regexp.MustCompile(`^(CumulusMessageError|TypeError: Cannot read propert(y|ies) (of|'))|collectionId required to generate a granule record|getMessageWorkflowStartTime|workflow_start_time`), Class: Permanent,
		Why: "the message lacks what every write needs (cumulus_meta.workflow_start_time, a collection for its granules): not a writable Cumulus message as it is"},
	{ID: "unreadable", Match: regexp.MustCompile(`^(SyntaxError: (Unexpected|Unterminated)|object is not valid JSON|layer \d+ body is not valid JSON|unreadable: )`), Class: Permanent,
		Why: "the object is not valid JSON (truncated, empty, corrupt); nothing can be written from it"},
	// Then what a missing record explains.
	{ID: "unmet-requirements", Match: regexp.MustCompile(`\bUnmetRequirementsError\b`), Class: FixFirst, Needs: NeedsReferences,
		Why: "the collection, async operation or parent execution the message names is not in the database (v21 writeRecords, shouldWriteExecutionToPostgres)"},
	{ID: "record-does-not-exist", Match: regexp.MustCompile(`(RecordDoesNotExist|Error): Record in \w+ with identifiers .* does not exist`), Class: FixFirst, Needs: NeedsNamedRecord,
		Why: "a record the write looks up (a provider, a PDR, a granule, a collection) is not in the database"},
	{ID: "pdr-provider", Match: regexp.MustCompile(`Provider reference is required for a PDR`), Class: FixFirst, Needs: NeedsProvider,
		Why: "the PDR's provider is not in the database (v21 writePdr); a message that names no provider never succeeds as it is"},
	// Then the named transient failures, and last the generic ones.
	{ID: "knex-timeout", Match: regexp.MustCompile(`^KnexTimeoutError\b`), Class: Transient,
		Why: "the database's connection pool was exhausted; a retry gets a connection once the load is gone"},
	{ID: "pg-connection-slots", Match: regexp.MustCompile(`remaining connection slots are reserved|too many clients already|the database system is (starting up|shutting down|in recovery mode)|cannot execute \w+ in a read-only transaction`), Class: Transient,
		Why: "PostgreSQL refused the connection or the write for a while (out of connections, restarting, a failover)"},
	{ID: "unique-race", Match: regexp.MustCompile(`duplicate key value violates unique constraint`), Class: Transient,
		Why: "two writers raced to insert the same record (Cumulus v21's insert-then-update race); a retry takes the update path"},
	{ID: "describe-execution", Match: regexp.MustCompile(`^TypeError: Cannot destructure property 'startDate' of '(undefined|null)'`), Class: Transient, DLAOnly: true,
		Why: "Cumulus v21 crashes when DescribeExecution fails (an execution whose history expired); dla recover writes the message without processing times and warns, Cumulus's own recovery fails again"},
	{ID: "connection", Match: regexp.MustCompile(`(?i)ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EAI_AGAIN|socket hang up|connection (refused|reset|terminated)|Connection terminated|terminating connection|timed? ?out\b|timeout\b`), Class: Transient,
		Why: "a connection was refused, reset or timed out"},
	{ID: "throttled", Match: regexp.MustCompile(`(?i)Throttl|Rate exceeded|TooManyRequests|SlowDown|RequestLimitExceeded|ProvisionedThroughputExceeded`), Class: Transient,
		Why: "an AWS service throttled the request"},
	{ID: "server-error", Match: regexp.MustCompile(`(?i)\b(HTTP(/\d(\.\d)?)?|status([ _-]?code)?["']?\s*[:=]?|response code:?)\s*5\d\d\b|ServiceUnavailable|InternalServerError|InternalFailure|Bad Gateway|Gateway Time-?out`), Class: Transient,
		Why: "a service answered 5xx"},
}

// UnknownRule is the verdict when no rule matches, or the object has no
// error text.
var UnknownRule = Rule{ID: "unknown", Class: Unknown, Why: "no rule matches this error text; look at one object before retrying"}

// UnreadableRule is the verdict of an object that could not be read or
// decoded.
var UnreadableRule = Rule{ID: "unreadable", Class: Permanent,
	Why: "the object is not valid JSON (truncated, empty, corrupt); nothing can be written from it"}

// ClassifyDLA is the rule of an error class (dla.ErrorClass); the unknown
// rule when none matches or the class is "".
func ClassifyDLA(class string) Rule {
	if class == "" {
		return UnknownRule
	}
	for _, r := range DLARules {
		if r.Match.MatchString(class) {
			return r
		}
	}
	return UnknownRule
}

// NoCode is the code of a message without an errorCode.
const NoCode = math.MinInt

// PushRule is one row of the push DLQ's table, by error code.
type PushRule struct {
	Code  int // NoCode: a message without an errorCode
	Class Class
	Why   string
}

// NotificationNotFound is 2003, whose verdict depends on the DLQ (see
// ClassifyPush).
const NotificationNotFound = 2003

// PushRules is the push DLQ's table; codes not in it are unknown.
var PushRules = []PushRule{
	{1001, Transient, "an SNS publish to a device endpoint failed (a quota, a throttled or failing SNS); the runbook's case"},
	{1004, Transient, "the aggregate of device publish failures; the runbook's own example replays it once SNS has capacity again"},
	{3001, Transient, "SQS failed when a secondary message was sent: an infrastructure failure"},
	{2002, Permanent, "the pushService is not APNS, GCM or GCM_BETA: the command itself is wrong, a replay fails the same way"},
	{NotificationNotFound, Unknown, "the notification was not in DynamoDB: written late (found on replay) or deleted (never found); the DLQ decides which"},
	{2001, Unknown, "the generic fallback: the push Lambda did not classify the failure"},
	{9000, Unknown, "unknown or uncategorised"},
	{NoCode, Unknown, "no errorCode: not classified by the push Lambda's second failure (a manual redrive, or an errorMessage alone)"},
}

// ClassifyPush is the rule of a code (NoCode: none), and for 2003
// the verdict from the DLQ: a burst of NotificationNotFound inside a burst
// of transient failures (lateWithTransient) is a notification written late
// during the incident, transient; alone, it is one that was deleted, and
// a replay will not find it.
func ClassifyPush(code int, lateWithTransient bool) PushRule {
	for _, r := range PushRules {
		if r.Code != code {
			continue
		}
		if code == NotificationNotFound {
			if lateWithTransient {
				return PushRule{code, Transient, "NotificationNotFound in the same burst as transient failures: the notification was written late during the incident, as in the runbook's example (replayed with 1004)"}
			}
			return PushRule{code, Permanent, "NotificationNotFound outside any burst of transient failures: the notification was deleted (or never written); a replay will not find it"}
		}
		return r
	}
	return PushRule{code, Unknown, "a code the PushErrorCode table does not have"}
}
