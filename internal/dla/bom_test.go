package dla

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestByteOrderMarkIsAccepted: an object saved with a UTF-8 byte-order mark
// was unreadable ("invalid character 'ï'"); it decodes as without one, with
// a problem note.
func TestByteOrderMarkIsAccepted(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/archive/demo/dead-letter-archive/sqs/2024-03-02/fc11c688-08b0-490f-a8c2-27af55e963d9-2c06e409-dae1-489b-84eb-e698da28bb8e")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	withBOM, err := Decode(append([]byte("\xEF\xBB\xBF"), raw...))
	if err != nil {
		t.Fatalf("with a byte-order mark: %v", err)
	}
	if withBOM.ExecutionArn != plain.ExecutionArn || withBOM.Status != plain.Status || !slices.Equal(withBOM.Granules, plain.Granules) || withBOM.Error != plain.Error {
		t.Errorf("decoded differently with a byte-order mark: %+v vs %+v", withBOM.Record, plain.Record)
	}
	if !slices.ContainsFunc(withBOM.Problems, func(p string) bool { return strings.Contains(p, "byte-order mark") }) {
		t.Errorf("problems %q do not name the byte-order mark", withBOM.Problems)
	}
	if slices.ContainsFunc(plain.Problems, func(p string) bool { return strings.Contains(p, "byte-order mark") }) {
		t.Error("a byte-order mark reported for an object without one")
	}
	// A mark alone, or before something that is not JSON, stays unreadable.
	if _, err := Decode([]byte("\xEF\xBB\xBF")); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("a lone byte-order mark: %v", err)
	}
}
