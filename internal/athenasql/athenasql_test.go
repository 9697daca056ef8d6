package athenasql

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

var names = NamesFor("my-stack")

func TestNamesFor(t *testing.T) {
	want := Names{Database: "my_stack_glue_database", Table: "my_stack_dla_glue_table", Workgroup: "my_stack_athena_workgroup"}
	if names != want {
		t.Fatalf("NamesFor = %+v, want %+v", names, want)
	}
}

// Golden SQL for every flag, one file per case under testdata/.
func TestGoldenSQL(t *testing.T) {
	week := Query{From: "2024-03-10", To: "2024-03-15"}
	with := func(f func(*Query)) Query { q := week; f(&q); return q }
	cases := map[string]struct {
		q  Query
		by string // "": a search
	}{
		"dates":              {q: week},
		"granule":            {q: with(func(q *Query) { q.Granules = []string{"MOD09GQ.A5039420.mQk0tM.006.9370766211793"} })},
		"granules-any":       {q: with(func(q *Query) { q.Granules = []string{"G1", "G2"} })},
		"collection-version": {q: with(func(q *Query) { q.Collections = []string{"MOD09GQ___006"} })},
		"collection-name":    {q: with(func(q *Query) { q.Collections = []string{"MOD09GQ"} })},
		"execution":          {q: with(func(q *Query) { q.Executions = []string{"arn:aws:states:us-east-1:1:execution:sm:run-1"} })},
		"execution-name":     {q: with(func(q *Query) { q.Executions = []string{"run-1"} })},
		"state-machine":      {q: with(func(q *Query) { q.StateMachines = []string{"IngestGranule"} })},
		"status":             {q: with(func(q *Query) { q.Statuses = []string{"FAILED", "none"} })},
		"error":              {q: with(func(q *Query) { q.Error = `UnmetRequirementsError|can't` })},
		"limit":              {q: with(func(q *Query) { q.Limit = 10 })},
		"all": {q: with(func(q *Query) {
			q.Granules = []string{"G1"}
			q.Collections = []string{"C___1"}
			q.Statuses = []string{"RUNNING"}
			q.Error = "x"
		})},
		"stats-date":             {q: week, by: "date"},
		"stats-error-collection": {q: with(func(q *Query) { q.Collections = []string{"MOD09GQ"} }), by: "error"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var sql string
			var err error
			if c.by == "" {
				sql, err = Search(c.q, names)
			} else {
				sql, err = Stats(c.q, names, c.by)
			}
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", name+".sql"), sql+"\n")
			if _, err := lex(sql); err != nil {
				t.Errorf("the golden SQL does not lex: %v", err)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	week := Query{From: "2024-03-10", To: "2024-03-15"}
	for name, q := range map[string]Query{
		"NUL":          {From: week.From, To: week.To, Granules: []string{"a\x00b"}},
		"invalid UTF8": {From: week.From, To: week.To, Collections: []string{"a\xffb___1"}},
		"bad regexp":   {From: week.From, To: week.To, Error: "(unclosed"},
	} {
		if _, err := Search(q, names); !errors.Is(err, ErrValue) {
			t.Errorf("%s: err = %v, want ErrValue", name, err)
		}
	}
	for name, q := range map[string]Query{
		"no dates":   {Granules: []string{"G"}},
		"no --to":    {From: "2024-01-01"},
		"reversed":   {From: "2024-03-15", To: "2024-03-10"},
		"not a date": {From: "2024-03-10'", To: "2024-03-15"},
	} {
		if _, err := Search(q, names); err == nil {
			t.Errorf("%s: built a query", name)
		}
	}
	if _, err := Search(week, Names{Database: `db"; DROP`, Table: "t"}); err == nil {
		t.Error("a database name with a quote was accepted")
	}
	if _, err := Stats(week, names, "generation"); err == nil {
		t.Error("--by generation was accepted")
	}
}

// FuzzNoValueEscapes builds a query with one hostile value in every filter
// and reads the SQL back with a Trino lexer. Nothing may escape its quotes:
// there is no comment, every word and operator is one the builder writes
// (with plain values), SELECT, FROM, WHERE and ORDER appear once each, and
// every string literal reads back as a value given (or one derived from it:
// a collection's name, an ARN's last token) or one of the builder's own.
func FuzzNoValueEscapes(f *testing.F) {
	for _, s := range []string{"x", "'", "''", `'; DROP TABLE t; --`, `\'`, "--", "/*", "*/", `"`, "a'b\nc", "U&'", "\u2019", "é'", "a:b/c", "___", "x:"} {
		f.Add(s)
	}
	build := func(v string, withError bool) (string, error) {
		q := Query{From: "2024-01-01", To: "2024-01-31",
			Granules: []string{v}, Collections: []string{v + "___1"}, Executions: []string{v},
			StateMachines: []string{v}, Statuses: []string{"FAILED"}}
		if withError {
			q.Error = v
		}
		return Search(q, names)
	}
	vocabulary := map[string]bool{}
	fixed := map[string]bool{}
	for _, marker := range []string{"MARKER", `M"R:`, "MARKER:"} {
		for _, withError := range []bool{false, true} {
			sql, err := build(marker, withError)
			if err != nil {
				f.Fatal(err)
			}
			toks, err := lex(sql)
			if err != nil {
				f.Fatal(err)
			}
			for _, tk := range toks {
				if tk.kind == tokString {
					if !strings.Contains(tk.text, "M") {
						fixed[tk.text] = true
					}
				} else {
					vocabulary[tk.kind.String()+" "+tk.text] = true
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, v string) {
		// v is also the --error expression when it is one.
		_, reErr := Where(Query{From: "2024-01-01", To: "2024-01-01", Error: v})
		withError := reErr == nil && v != "" // an empty --error is no filter
		sql, err := build(v, withError)
		if err != nil {
			if !errors.Is(err, ErrValue) {
				t.Fatalf("%q: refused without ErrValue: %v", v, err)
			}
			return
		}
		got, err := lex(sql)
		if err != nil {
			t.Fatalf("%q: the SQL does not lex: %v\n%s", v, err, sql)
		}
		name, _, _ := strings.Cut(v+"___1", "___")
		values := map[string]bool{v: true, v + "___1": true, name: true, lastToken(v): true}
		keywords := map[string]int{}
		seenV := false
		for i, tk := range got {
			switch {
			case tk.kind == tokComment:
				t.Fatalf("%q: a comment at token %d:\n%s", v, i, sql)
			case tk.kind == tokString:
				if !values[tk.text] && !fixed[tk.text] {
					t.Fatalf("%q: literal %d reads back as %q, which is no value given:\n%s", v, i, tk.text, sql)
				}
				seenV = seenV || tk.text == v
			case !vocabulary[tk.kind.String()+" "+tk.text]:
				t.Fatalf("%q: token %d is %v %q, which the builder never writes:\n%s", v, i, tk.kind, tk.text, sql)
			case tk.kind == tokWord:
				keywords[tk.text]++
			}
		}
		for _, k := range []string{"select", "from", "where", "order"} {
			if keywords[k] != 1 {
				t.Fatalf("%q: %q appears %d times:\n%s", v, k, keywords[k], sql)
			}
		}
		if !seenV {
			t.Fatalf("%q: no literal reads back as the value:\n%s", v, sql)
		}
	})
}

// The lexer below reads Trino SQL as Trino's does (SqlBase.g4): string
// literals in single quotes with ” for a quote (also U&'...' and X'...'),
// identifiers in double quotes with "" for a quote, -- and /* */ comments,
// and everything else as words, numbers and operators.
type tokKind int

const (
	tokWord tokKind = iota
	tokString
	tokIdent
	tokNumber
	tokOp
	tokComment
)

func (k tokKind) String() string {
	return [...]string{"word", "string", "identifier", "number", "operator", "comment"}[k]
}

type token struct {
	kind tokKind
	text string // a literal's value, unquoted
}

func lex(sql string) ([]token, error) {
	var out []token
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = len(sql) - i
			}
			out = append(out, token{tokComment, sql[i : i+end]})
			i += end
		case strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return nil, errors.New("unterminated comment")
			}
			out = append(out, token{tokComment, sql[i : i+end+4]})
			i += end + 4
		case c == '\'' || ((c == 'U' || c == 'u') && strings.HasPrefix(sql[i+1:], "&'")) || ((c == 'X' || c == 'x') && i+1 < len(sql) && sql[i+1] == '\''):
			start := strings.IndexByte(sql[i:], '\'') + i
			v, n, err := quoted(sql[start:], '\'')
			if err != nil {
				return nil, err
			}
			if start != i {
				return nil, errors.New("prefixed literal " + sql[i:start+n])
			}
			out = append(out, token{tokString, v})
			i = start + n
		case c == '"':
			v, n, err := quoted(sql[i:], '"')
			if err != nil {
				return nil, err
			}
			out = append(out, token{tokIdent, v})
			i += n
		case c == '_' || c == '$' || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			j := i + 1
			for j < len(sql) && (sql[j] == '_' || sql[j] == '$' || (sql[j]|0x20 >= 'a' && sql[j]|0x20 <= 'z') || (sql[j] >= '0' && sql[j] <= '9')) {
				j++
			}
			out = append(out, token{tokWord, strings.ToLower(sql[i:j])})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(sql) && sql[j] >= '0' && sql[j] <= '9' {
				j++
			}
			out = append(out, token{tokNumber, sql[i:j]})
			i = j
		case strings.ContainsRune("(),.=<>*;|+-/%[]", rune(c)):
			out = append(out, token{tokOp, string(c)})
			i++
		default:
			return nil, errors.New("unexpected byte " + string(c) + " at " + sql[i:])
		}
	}
	return out, nil
}

// quoted reads a literal starting at its opening quote q; a doubled quote
// is one quote. It returns the value and the bytes read.
func quoted(s string, q byte) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), i + 1, nil
	}
	return "", 0, errors.New("unterminated literal")
}

func TestLexerSeesAnEscape(t *testing.T) {
	// The lexer must see what a naive builder would let through.
	naive := "SELECT 1 WHERE contains(granules, '" + "x'); DROP TABLE t; --" + "')"
	toks, err := lex(naive)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(toks, func(tk token) bool { return tk.kind == tokComment }) ||
		!slices.ContainsFunc(toks, func(tk token) bool { return tk.kind == tokWord && tk.text == "drop" }) {
		t.Fatalf("the lexer missed an escaped value: %v", toks)
	}
}
