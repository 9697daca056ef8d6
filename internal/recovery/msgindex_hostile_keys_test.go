package recovery

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestMsgGetMatchesGjsonOnHostileKeys compares Msg.Get (and a granule's
// indexObject) with gjson on random objects three levels deep whose keys
// are plain names, the same names escaped (\u0061 for a), and names gjson
// paths treat specially (dots, *, ?, #, |, @, backslashes, empty), listed
// once or twice, with values of every kind, for plain paths and special
// ones of one to four parts.
func TestMsgGetMatchesGjsonOnHostileKeys(t *testing.T) {
	rnd := rand.New(rand.NewSource(15))
	keys := []string{"a", "b", "status", "meta", `\u0061`, `st\u0061tus`, `m\u0065ta`, "a.b", "a*", "a?", "#", "a|b", "@this", `a\\`, `a\"`, "", "0", "1", "é", `\u00e9`, "granuleId", `gr\u0061nuleId`}
	leaf := []string{`"s"`, `"a\u0062"`, `1`, `-1.5e3`, `null`, `true`, `false`, `{}`, `[]`, `[1,{"a":2}]`, `" x "`}
	var value func(depth int) string
	value = func(depth int) string {
		if depth == 0 || rnd.Intn(3) == 0 {
			return leaf[rnd.Intn(len(leaf))]
		}
		if rnd.Intn(5) == 0 {
			return "[" + value(depth-1) + "," + value(depth-1) + "]"
		}
		var sb strings.Builder
		sb.WriteString("{ ")
		for j := range rnd.Intn(5) {
			if j > 0 {
				sb.WriteString(" ,\n")
			}
			sb.WriteString(`"` + keys[rnd.Intn(len(keys))] + `" : ` + value(depth-1))
		}
		sb.WriteString("}")
		return sb.String()
	}
	parts := []string{"a", "b", "status", "meta", "granuleId", "0", "1", "x", "é", "a*", "a?", "#", `a\.b`, "@this", "a|b", `a\\`}
	indexed, compared := 0, 0
	for range 20000 {
		text := value(4)
		if text[0] != '{' {
			continue
		}
		msg := gjson.Parse(text)
		if !gjson.Valid(text) {
			t.Fatalf("generated invalid JSON: %s", text)
		}
		m, g := Index(msg), indexObject(msg, true)
		if m.idx != nil {
			indexed++
		}
		for range 12 {
			var p []string
			for range 1 + rnd.Intn(4) {
				p = append(p, parts[rnd.Intn(len(parts))])
			}
			path := strings.Join(p, ".")
			want := msg.Get(path)
			for _, got := range []gjson.Result{m.Get(path), g.Get(path)} {
				compared++
				if got.Raw != want.Raw || got.Type != want.Type || got.Str != want.Str || got.Num != want.Num || got.Exists() != want.Exists() {
					t.Fatalf("%s on %s: got %q (%v), want %q (%v)", path, text, got.Raw, got.Type, want.Raw, want.Type)
				}
			}
		}
	}
	if indexed < 5000 {
		t.Fatalf("only %d objects indexed: gjson compared with itself", indexed)
	}
	t.Logf("%d indexed, %d lookups compared", indexed, compared)
}
