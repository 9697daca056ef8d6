package cumulusdb

// GranuleSQLFor is the granule statement a generation pipelines for a
// status (its plain insert, where it has one), for tests that recognise
// the statement on the wire.
func GranuleSQLFor(gen Generation, status string) string {
	st := statementsFor(gen)
	if st.granuleInsert != "" {
		return st.granuleInsert
	}
	return granuleStatement(st.granule, status)
}

// PdrAfterExecutionSQL is the PDR upsert a generation sends after the
// execution in one pipeline ($7: the call's token), and
// ExecutionNotWritten its refusal when the execution was not written.
func PdrAfterExecutionSQL(gen Generation) string {
	if gen.Partitioned() {
		return v22ExecThenPdr.pdr[0]
	}
	return v21ExecThenPdr.pdr[0]
}

var ExecutionNotWritten = executionNotWritten
