package cumulusdb

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deadletter/deadletter/internal/recovery"
)

// A message's execution and then its PDR in one round trip (v21 writes the
// PDR only once the execution is committed, and with its cumulus_id).
//
// The two statements go in one pipeline, each its own implicit
// transaction (a Sync after each): a failed PDR does not undo the
// execution, as in Cumulus. The PDR statement must not run when the
// execution's did not write, and takes the cumulus_id the execution's
// returned, which the client does not know yet when it sends them. So the
// execution's statement also sets a session setting, in its own
// transaction, to a token of this call and the id it wrote
// (set_config(..., false), undone with the transaction when the statement
// fails, and never set when v22 found the id it drew taken). The PDR's
// statement reads its execution id from that setting, and fails (casting
// notWrittenMark) when the setting does not hold this call's token: after
// a failed execution, or on a connection that is not the execution's
// (a pooler between the two). The PDR is then written as before, after
// the execution, or not at all. Only without notifications
// (recovery.Writer.pdrWithExecution): with them the execution's is
// published before the PDR is written.

// execSetting is the session setting the execution's statement leaves.
const execSetting = "deadletter.execution"

// notWrittenMark is what the PDR statement casts to bigint when its
// execution was not written in the same pipeline: its refusal (22P02),
// which names it for whoever reads the server's log.
const notWrittenMark = "the execution before it was not written"

// execMarkV21 and execMarkV22 are the column each generation's execution
// statement gains ($17: the call's token). v22's statements select the
// execution holding a taken id (taken): nothing was written then.
const (
	execMarkV21 = `, set_config('` + execSetting + `', $17::text || ' ' || up.cumulus_id, false)`
	execMarkV22 = `, set_config('` + execSetting + `', CASE WHEN NOT EXISTS (SELECT 1 FROM taken) THEN $17::text || ' ' || up.cumulus_id ELSE '' END, false)`
)

// execIDFromSetting replaces the PDR statements' $7 (the execution's
// cumulus_id): the id the execution's statement set, when the setting
// holds the token $7 (now text), and otherwise an error naming
// notWrittenMark. The setting is read once per row of the statement.
const execIDFromSetting = `(CASE WHEN split_part(current_setting('` + execSetting + `', true), ' ', 1) = $7::text
  THEN split_part(current_setting('` + execSetting + `', true), ' ', 2) ELSE '` + notWrittenMark + `' END)::bigint`

// pdrAfterExecution is a PDR statement taking its execution from the
// setting, with $7 the token (v22's cast of $7 is in execIDFromSetting).
func pdrAfterExecution(pdrSQL string) string {
	return strings.ReplaceAll(strings.ReplaceAll(pdrSQL, "$7::bigint", "$7"), "$7", execIDFromSetting)
}

// execThenPdr are the statements of UpsertExecutionThenPdr, by running:
// the generation's first execution write with its mark, and the PDR
// upsert returning its id (UpsertPdrID's) after it.
type execThenPdr struct {
	execution [2]string
	pdr       [2]string
}

func newExecThenPdr(st *statements) *execThenPdr {
	var e execThenPdr
	for running := 0; running < 2; running++ {
		e.pdr[running] = pdrAfterExecution(st.pdrID[running])
	}
	if st.gen.Partitioned() {
		// v22 tries the insert first (DB.write), whatever the status.
		for running := 0; running < 2; running++ {
			e.execution[running] = v22ExecutionInsertSQL("up.cumulus_id" + execMarkV22)
		}
		return &e
	}
	for running, upsert := range []string{upsertExecution, upsertRunningExecution} {
		e.execution[running] = withReturning(upsert, "e", "NULL::text, up.cumulus_id"+execMarkV21)
	}
	return &e
}

var (
	v21ExecThenPdr = newExecThenPdr(v21Statements)
	v22ExecThenPdr = newExecThenPdr(v22Statements)
)

func (d *DB) execThenPdr() *execThenPdr {
	if d.st.gen.Partitioned() {
		return v22ExecThenPdr
	}
	return v21ExecThenPdr
}

// tokens are the calls' tokens: this process's random prefix, then a
// count, so no two calls of any process share one.
var tokens = struct {
	prefix string
	n      atomic.Uint64
}{prefix: rand.Text()}

func nextToken() string {
	return tokens.prefix + "-" + strconv.FormatUint(tokens.n.Add(1), 10)
}

var _ recovery.ExecutionPdrBatcher = (*DB)(nil)

// KnownProviderID is the provider's cumulus_id when ProviderID would
// return it without a query (nil otherwise).
func (d *DB) KnownProviderID(name string) *int64 {
	if v, ok := d.ids.Load(providerKey(name)); ok {
		id := v.(int64)
		return &id
	}
	return nil
}

// UpsertExecutionThenPdr is UpsertExecution of e, then, when it wrote,
// UpsertPdrID of p with the execution's cumulus_id, in one round trip.
// p.ExecutionID is not read. When the PDR statement could not run after
// the execution's (the execution met a row v22 then updates, or another
// writer; a race of the PDR), the rest is done as before, one write after
// the other; PdrTried is false when the PDR is still to be written (the
// execution failed, or took another round trip). An execution that meets
// the same race every time is tried once more than one by one (the
// pipeline's try, then UpsertExecution's).
func (d *DB) UpsertExecutionThenPdr(ctx context.Context, e *recovery.ExecutionRow, p *recovery.PdrRow) recovery.ExecutionThenPdr {
	var res recovery.ExecutionThenPdr
	st := d.execThenPdr()
	token := nextToken()

	var taken, mark *string
	var up, kept *int64
	errs := d.pipeline(ctx, []pipeStmt{
		{sql: st.execution[boolIndex(e.Status == "running")], args: executionArgs(e, token), read: scanOne(&taken, &res.ExecutionID, &mark)},
		{sql: st.pdr[boolIndex(p.Status != nil && *p.Status == "running")], args: pdrArgs(p, token), read: scanOne(&up, &kept)},
	})

	// The execution, as UpsertExecution would have left it.
	execErr := errs[0]
	if t, ok := takenID("executions", taken); ok && execErr == nil {
		res.ExecutionErr = d.takenError(ctx, t)
		return res
	}
	if execErr != nil {
		if d.isRace(ctx, execErr) && ctx.Err() == nil {
			// A row (v22's insert) or another writer: the full statement, then
			// the PDR after it, as before.
			res.ExecutionID, res.ExecutionErr = d.upsertExecution(ctx, e, "")
			return res
		}
		res.ExecutionErr = d.classify(ctx, execErr)
		return res
	}

	// The PDR, as UpsertPdrID would have left it.
	switch pdrErr := errs[1]; {
	case executionNotWritten(pdrErr), d.isRace(ctx, pdrErr) && ctx.Err() == nil:
		return res // written after, on its own (UpsertPdrID retries a race)
	case pdrErr != nil:
		res.PdrTried, res.PdrErr = true, d.classify(ctx, pdrErr)
		return res
	}
	res.PdrTried, res.PdrWritten, res.PdrID = true, up != nil, up
	if up == nil {
		res.PdrID = kept
	}
	return res
}

// executionNotWritten reports whether err may be the PDR statement's
// refusal to run after an execution that was not written
// (execIDFromSetting): an invalid text representation, by its SQLSTATE
// alone, not by the message, which the server words in its own language.
// Another 22P02 of the PDR's is then met again where the PDR is written on
// its own, and judged there as before.
func executionNotWritten(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "22P02"
}
