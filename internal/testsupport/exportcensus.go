package testsupport

import (
	"testing"

	"github.com/tidwall/gjson"
)

// ExportFileCensus adds the lines of a pushdlq export file to a census of
// where each message body is ("file" appended to places[body]) and fails
// the test for a message id the file holds more than once.
func ExportFileCensus(t testing.TB, file string, places map[string][]string) {
	t.Helper()
	ids := map[string]int{}
	for _, l := range ReadLines(t, file) {
		body := gjson.Get(l, "body").Str
		places[body] = append(places[body], "file")
		ids[gjson.Get(l, "message_id").Str]++
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("message %s is %d times in the file", id, n)
		}
	}
}
