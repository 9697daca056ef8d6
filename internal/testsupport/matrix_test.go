package testsupport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The record of a database test says what it used, once each: scripts/test
// runs a test that never asked for the generation once per server, and one
// that did in every matrix pass.
func TestADatabaseTestsRecordSaysWhetherItAskedForTheGeneration(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tests")
	t.Setenv(EnvDatabaseTests, file)
	t.Run("server", func(t *testing.T) {
		noteDatabaseTest(t, "server")
		noteDatabaseTest(t, "server")
	})
	t.Run("generation", func(t *testing.T) {
		noteDatabaseTest(t, "server")
		Generation(t)
	})
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	name := t.Name()
	want := packageDir + "\t" + name + "\tserver\n" + packageDir + "\t" + name + "\tgeneration\n"
	if got := string(b); got != want {
		t.Errorf("records:\n%s\nwant:\n%s", strings.ReplaceAll(got, "\t", " | "), strings.ReplaceAll(want, "\t", " | "))
	}
}
