package cumulusdb

import (
	"strconv"
	"strings"

	"github.com/deadletter/deadletter/internal/recovery"
)

// statements are the SQL of one schema generation: the adapter of that
// generation. The driver around them (DB: savepoints, the race retry,
// pipelines, the dry run's transaction, classification) is the same for
// every generation; what differs is only what is sent.
type statements struct {
	gen Generation
	// execution[running] and executionRecord[running]: the execution
	// write, returning "taken <id>" or NULL (v22: the cumulus_id drawn
	// for a new execution is another's, and nothing was written; see
	// v22NewID), then its cumulus_id, or the columns of
	// storedExecutionCols.
	execution, executionRecord [2]string
	// pdr, pdrRecord, pdrID [running]: the PDR upsert returning its
	// cumulus_id (no row: the guard kept the row), the columns of
	// storedPdrCols, or the written and the kept id.
	pdr, pdrRecord, pdrID [2]string
	// granule and granuleRecord by status ("running", "queued", "final"):
	// the other collection (text, or NULL; v21: name___version, v22:
	// cumulus_id:name___version), then the written row's
	// cumulus_id, or the columns of storedGranuleCols.
	granule, granuleRecord map[string]string
	// files writes a granule's files and removes its others; fileOne
	// writes one file, for the file-by-file retry of a failed files
	// write ("" when the generation writes a granule's files in one
	// transaction, all or none, as v22 does).
	files, fileOne string
	linkGranules   string
	// executionInsert, executionRecordInsert, granuleInsert,
	// granuleRecordInsert and filesInsert are the plain inserts a
	// generation tries first, with the same parameters and results as the
	// statements above ("": none, the statement above runs at once). One
	// that meets an existing row fails with a unique violation, and the
	// full statement runs (DB.write).
	executionInsert, executionRecordInsert string
	granuleInsert, granuleRecordInsert     string
	filesInsert                            string
	// otherCollection is the generation's refusal of a granule_id that
	// another collection holds; other is the first column of the granule
	// statement.
	otherCollection func(gw *recovery.GranuleWrite, other string) error
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

var v21Statements = &statements{
	gen:             V21,
	execution:       [2]string{withReturning(upsertExecution, "e", "NULL::text, up.cumulus_id"), withReturning(upsertRunningExecution, "e", "NULL::text, up.cumulus_id")},
	executionRecord: [2]string{upsertExecutionRecord, upsertRunningExecutionRecord},
	pdr:             [2]string{upsertPdr, upsertRunningPdr},
	pdrRecord:       [2]string{upsertPdrRecord, upsertRunningPdrRecord},
	pdrID:           [2]string{upsertPdrID, upsertRunningPdrID},
	granule:         granuleSQLByStatus,
	granuleRecord:   granuleRecordSQLByStatus,
	files:           writeFilesSQL,
	fileOne:         writeFileSQL,
	linkGranules: `INSERT INTO granules_executions (granule_cumulus_id, execution_cumulus_id)
SELECT cumulus_id, $2 FROM granules WHERE granule_id = ANY($1)
ON CONFLICT (granule_cumulus_id, execution_cumulus_id) DO NOTHING`,
	otherCollection: func(gw *recovery.GranuleWrite, other string) error {
		return recovery.OtherCollectionError(gw.Row.GranuleID, gw.CollectionID, other)
	},
}

var v22Statements = newV22Statements()

func newV22Statements() *statements {
	st := &statements{
		gen:                   V22_3,
		execution:             [2]string{v22ExecutionSQL(false, "up.cumulus_id"), v22ExecutionSQL(true, "up.cumulus_id")},
		executionRecord:       [2]string{v22ExecutionSQL(false, storedExecutionCols), v22ExecutionSQL(true, storedExecutionCols)},
		pdr:                   [2]string{v22PdrSQL(false), v22PdrSQL(true)},
		granule:               map[string]string{},
		granuleRecord:         map[string]string{},
		files:                 v22FilesSQL,
		linkGranules:          v22LinkGranulesSQL,
		executionInsert:       v22ExecutionInsertSQL("up.cumulus_id"),
		executionRecordInsert: v22ExecutionInsertSQL(storedExecutionCols),
		granuleInsert:         v22GranuleInsertSQL("g.cumulus_id"),
		granuleRecordInsert:   v22GranuleInsertSQL(storedGranuleCols),
		filesInsert:           v22FilesInsertSQL,
		otherCollection: func(gw *recovery.GranuleWrite, other string) error {
			// "<cumulus_id>:<name___version>"
			idText, name, _ := strings.Cut(other, ":")
			id, err := strconv.ParseInt(idText, 10, 64)
			if err != nil {
				return recovery.OtherCollectionError(gw.Row.GranuleID, gw.CollectionID, other)
			}
			return v22OtherCollectionError(gw.Row.GranuleID, id, name)
		},
	}
	for i := range st.pdr {
		st.pdrRecord[i] = withReturning(st.pdr[i], "p", storedPdrCols)
		st.pdrID[i] = withKeptID(st.pdr[i])
	}
	for key, status := range map[string]string{"running": "running", "queued": "queued", "final": "completed"} {
		st.granule[key] = v22GranuleSQL(status, "g.cumulus_id")
		st.granuleRecord[key] = v22GranuleSQL(status, storedGranuleCols)
	}
	return st
}

// statementsFor is the adapter of a generation.
func statementsFor(gen Generation) *statements {
	if gen.Partitioned() {
		return v22Statements
	}
	return v21Statements
}

// granuleStatement is the statement of a status in a set by status.
func granuleStatement(set map[string]string, status string) string {
	if s, ok := set[status]; ok {
		return s
	}
	return set["final"]
}
