package athenasql

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

// Keys asks for the objects whose error is one of the texts given ("" for
// none), each text a literal; past MaxErrorsListed bytes of texts it asks
// for every object of the dates (the caller sorts the rows).
func TestKeysListsTheErrorTextsItIsGiven(t *testing.T) {
	week := Query{From: "2024-03-10", To: "2024-03-15"}
	sql, err := Keys(week, names, []string{"KnexTimeoutError: can't acquire a connection", ""})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "keys.sql"), sql+"\n")
	if _, err := lex(sql); err != nil {
		t.Errorf("the SQL does not lex: %v", err)
	}
	many := make([]string, MaxErrorsListed/100+10)
	for i := range many {
		many[i] = strings.Repeat("x", 96) + string(rune('a'+i%26))
	}
	all, err := Keys(week, names, many)
	if err != nil {
		t.Fatal(err)
	}
	none, _ := Keys(week, names, nil)
	if all != none || strings.Contains(all, "error IN") {
		t.Errorf("texts past the limit are listed:\n%.300s", all)
	}
	if nul, err := Keys(week, names, []string{"a\x00b", "c"}); err != nil || nul != none {
		t.Errorf("a text with a NUL byte: %v\n%s", err, nul)
	}
}

func TestParseTriageRowRefusesWhatIsNotARow(t *testing.T) {
	s := aws.String
	good := []*string{s("e"), nil, nil, s("2024-03-10"), s("3"), s("s3://b/k")}
	r, err := ParseTriageRow(good)
	if err != nil || r.N != 3 || r.Error != "e" || r.Collection != "" || r.Path != "s3://b/k" {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range [][]*string{good[:5], {s("e"), nil, nil, s("d"), s("-1"), s("p")}, {s("e"), nil, nil, s("d"), s("x"), s("p")}, {s("e"), nil, nil, s("d"), s("1"), nil}} {
		if _, err := ParseTriageRow(bad); err == nil {
			t.Errorf("%v read as a row", bad)
		}
	}
}
