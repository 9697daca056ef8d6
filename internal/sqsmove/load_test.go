package sqsmove_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// An export file saved by an editor that adds a UTF-8 byte-order mark and
// CRLF line ends loads as written.
func TestLoadAcceptsAByteOrderMarkAndCRLF(t *testing.T) {
	hold, err := sqsmove.NewHold(nil, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	file := "\xef\xbb\xbf" + `{"message_id":"a","body":"{\"n\":1}"}` + "\r\n" + `{"message_id":"b","body":"{\"n\":2}"}` + "\r\n"
	var ids []string
	err = hold.Load(strings.NewReader(file), "edited.ndjson", func(_ int, m *sqsmove.Message) bool {
		ids = append(ids, m.MessageID+" "+m.Body)
		return false
	})
	if err != nil || strings.Join(ids, ",") != `a {"n":1},b {"n":2}` {
		t.Errorf("loaded %q, err %v", ids, err)
	}
}
