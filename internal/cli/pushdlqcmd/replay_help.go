package pushdlqcmd

// replayLong is pushdlq replay's help: its steps, the streamed run, the
// uncertain sends, the journal and --resume, the audit record and the
// replay guard.
const replayLong = `Replay the DLQ messages whose errorCode is selected (--codes 1004,2003, or '*'
alone) and whose createdAt lies inside the inclusive window (--window
START/END, each ISO-8601 or epoch milliseconds; a time without a zone is UTC,
and a date alone is midnight UTC at the start of that day, so
2025-11-14/2025-11-15 covers the 14th and ends at 2025-11-15T00:00:00.000Z;
or --since 30m, 6h, 2d or 1w, the window from now minus that to now)
to ${queue-base-url}P${priority}, exactly as
the push-dlq processor decides. --from-env reads the processor's variables
(PUSH_DLQ_QUEUE_URL, PUSH_QUEUE_BASE_URL, PROCESS_START_AT, PROCESS_END_AT,
PROCESS_ERROR_CODES), so a runbook's env file works unchanged; flags given
as well win over it.

The window applies to the body's createdAt (epoch milliseconds, a numeric
string or ISO-8601), never to the SQS SentTimestamp. A message without error
metadata (a manual redrive) is eligible only under --codes '*'; a body that is
not JSON or lacks priority or createdAt never is.

Steps:
  1. scan the DLQ, holding each message invisible, and print a plan on stderr:
     the window as resolved instants, eligible counts by code and priority
     with their target queues (each checked: a missing queue is named),
     ineligible counts by reason, messages in flight elsewhere, and the
     identity (account, region, profile, endpoint);
  2. --dry-run stops there and releases every message (exit 3 if a target
     queue is missing; if one could not be checked: no credentials, access
     denied, an endpoint that cannot be reached, one line says why and the
     exit is 4 for credentials or permission, else 1); otherwise confirm, or
     pass --yes when not on a terminal;
  3. send one canary message to each target queue (a missing queue or a
     refused permission stops that target before the rest are touched), then
     the rest in batches of up to 10 messages and 256 KiB; delete from the DLQ
     only what a target accepted;
  4. ineligible messages are released untouched (--ineligible release), or
     parked like the processor does: re-sent to the DLQ with DelaySeconds 900
     and the original deleted (--ineligible park);
  5. end with one summary record, and on stderr the reason for each target
     queue that failed; exit 3 if anything failed or is uncertain.

With --yes, a fresh run from the DLQ with --ineligible release does not wait
for the end of the scan: step 3 starts at the first eligible message
received (each message is journalled as held before its batch is sent), and
the plan is printed once the scan is over, as a record of what was found.

A send whose reply never came (a cut connection, a timeout, a 5xx) is
"uncertain": the message may be in its target, so it is not deleted from the
DLQ. It is journalled as uncertain, counted in the summary and listed there
(possible_duplicate_ids) with the messages a resume sends again.

A message the run no longer holds is never sent: when the run was paused
past --visibility-timeout (SIGSTOP, Ctrl-Z, a frozen machine), or a renewal
of its visibility was refused (another consumer received it), it is left
alone, counted as hold_lost and listed (hold_lost_ids), and the run exits 3;
one whose send was in flight then is listed among possible duplicates.
A delete refused for lack of permission stops the run at once (exit 4),
saying how many messages are in both places; --resume deletes them.

A write-ahead journal (--journal, default under $XDG_STATE_HOME/deadletter)
records which messages the run holds and until when, each batch before it is
sent, and each outcome after. --resume JOURNAL continues a run that was
killed: it first waits until the messages the interrupted run held are
visible again (at most --wait-held; longer, it exits 1 saying until when);
messages the journal shows as sent are deleted from the DLQ instead of being
sent again; uncertain ones (the batch in flight when the run died, and sends
whose reply was lost) are sent again, and are the only possible duplicates.
A fresh replay of a DLQ whose last replay was killed, leaving messages held
or unconfirmed in its journal under $XDG_STATE_HOME/deadletter, is refused
(it would send them again) and prints the --resume command instead.
After the scan, the DLQ's messages that are neither visible nor held by
this run are in flight elsewhere (another consumer, an interrupted run, a
receive whose reply was lost), and delayed ones cannot be read yet: the
plan and the summary count both (in_flight_elsewhere, delayed), and the
run exits 3 whenever either is not zero, never "nothing to replay" and 0.

Every run that moves anything leaves an audit record: who (the AWS caller
identity, the OS user, the host), why (--reason or $DEADLETTER_REASON), the
invocation (secrets redacted), the plan, and each message's outcome with its
notification id. It goes to --audit s3://BUCKET/PREFIX or $DEADLETTER_AUDIT,
else to the local state directory (not shared with other operators; the
plan says so). It is begun after the plan and the confirmation, before the
first move: if it cannot be written, the run refuses with nothing moved
(--no-audit runs without one). A dry run writes none. pushdlq history reads
the records.

The replay guard: a redriven message is a new message, so a notification
that keeps failing can be replayed again and again. Before the plan, the
recorded replay runs are counted per notification; a notification replayed
--max-replays times already (default 3) is not sent again: it stays in the
DLQ, released or parked as --ineligible says, and is counted apart as
held_back, named in the summary with its count. If the records cannot be
read, the run refuses unless --max-replays 0 (no limit).`

// replayExample is pushdlq replay's examples.
const replayExample = `  pushdlq replay --dlq push-dlq --queue-base-url https://sqs.us-east-1.amazonaws.com/123456789012/push- \
      --window 2025-11-14T08:30:00Z/2025-11-14T09:00:00Z --codes 1004,2003 --dry-run
  pushdlq replay --dlq push-dlq --queue-base-url URL --since 6h --codes 1004 --dry-run
  env $(cat push-dlq.env) pushdlq replay --from-env --yes --rate 50
  pushdlq replay --from-env --resume ~/.local/state/deadletter/replay-20251114T091500Z.ndjson --yes
  pushdlq replay --from-file edited.ndjson --queue-base-url URL --window START/END --codes '*' --yes`
