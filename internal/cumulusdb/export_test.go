package cumulusdb

// GranuleSQLFor is the granule statement of a generation and status, for
// tests that recognise the statement on the wire.
func GranuleSQLFor(gen Generation, status string) string {
	return granuleStatement(statementsFor(gen).granule, status)
}
