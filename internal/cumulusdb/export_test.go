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
