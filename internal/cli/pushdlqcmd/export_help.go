package pushdlqcmd

// exportLong is pushdlq export's help: the file, --delete, the in-flight
// limit and --resume.
const exportLong = `Receive every message of the DLQ and write it to an NDJSON file, one message
per line: message_id, body, message_attributes, attributes (the system
attributes: SentTimestamp, ApproximateReceiveCount, MessageGroupId, ...)
and queue (the DLQ's URL). 'pushdlq replay --from-file' reads the file
back, edited or not.

The file is written as FILE.partial, flushed and synced to disk. Nothing
is deleted from the DLQ unless --delete is given; then only the messages
that are in the synced file are deleted, every other message is made
visible again, and only then does FILE.partial become FILE (never
replacing an existing FILE): FILE never holds a message still in the DLQ
unless the deletion was declined.

A DLQ deeper than SQS's in-flight limit (about 120,000 messages received
and not yet deleted) stops the scan there. With --delete the export reads
on (after asking, unless --yes): it syncs FILE.partial, deletes the
messages it holds, and scans again, appending to the same file, until the
DLQ is read to its end. Otherwise the file holds what was read, and the
run says how far it got and exits 3. A message in flight elsewhere after
the scan (another consumer's, or a stopped export's) could not be read:
the run says how many, and exits 3, the file holding the rest.

An export that stopped or was killed leaves FILE.partial, and a new export
to FILE is refused. --resume finishes it, with --delete or without: it
refuses (exit 2, naming the line) a FILE.partial with a message id on two
lines or a line of another queue, waits (at most --wait-held) until
nothing of the DLQ is in flight, scans the DLQ again, appends the messages
that are not in FILE.partial (by message id) and, with --delete, deletes
from the DLQ both those and the ones it finds already in the file, which
it does not write again. FILE.partial becomes FILE only once the scan read
the whole DLQ, every delete succeeded and nothing else of the DLQ was in
flight: every message is then in the file once (and, with --delete, in
exactly one place). Otherwise FILE.partial stays, and the run exits 3
(saying how many messages were in flight; 1 when messages stay in flight
past --wait-held) and prints the command to run again.`
