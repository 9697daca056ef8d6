package cumulusdb

// GranuleSQLFor is granuleSQLFor, for tests that recognise the statement
// on the wire.
var GranuleSQLFor = granuleSQLFor
