package testsupport

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// EnvDatabaseTests, when set, names a file to which each test that uses the
// test PostgreSQL server or the Cumulus generation under test appends a
// line: its package directory, a tab, its top-level name, a tab, and what
// it used: "server" (DatabaseURL) or "generation" (Generation).
// scripts/test sets it for its first pass and then runs the database matrix
// (other PostgreSQL versions and Cumulus generations) on just the tests
// listed, not on whole packages: a test that never reaches a database
// behaves the same in every pass, and one that never asked for the
// generation (it builds the generations it tests itself) the same in every
// pass on one server, so it runs once per server.
const EnvDatabaseTests = "DEADLETTER_TEST_DATABASE_TESTS"

var noted sync.Map // top-level test name and what it used → struct{}

// packageDir is the test binary's package directory, where go test starts
// it: read before any test can change the working directory.
var packageDir, packageDirErr = os.Getwd()

// noteDatabaseTest records t (its top-level test) in EnvDatabaseTests's
// file as using what ("server" or "generation"), once per test binary. A
// record that cannot be written fails the test: a matrix that silently
// skipped it would prove nothing.
func noteDatabaseTest(t testing.TB, what string) {
	file := os.Getenv(EnvDatabaseTests)
	if file == "" {
		return
	}
	name, _, _ := strings.Cut(t.Name(), "/")
	if _, seen := noted.LoadOrStore(name+"\t"+what, struct{}{}); seen {
		return
	}
	dir, err := packageDir, packageDirErr
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			// One write of one short line: lines of concurrent test
			// binaries do not interleave (O_APPEND).
			_, err = fmt.Fprintf(f, "%s\t%s\t%s\n", dir, name, what)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		t.Fatalf("%s: recording %s as a database test: %v", EnvDatabaseTests, name, err)
	}
}
