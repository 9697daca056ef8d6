package recovery

import (
	"context"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
)

// msgIndexPaths are the paths Write reads, and some that are not plain
// keys or that reach below the indexed levels.
var msgIndexPaths = []string{
	"meta", "meta.status", "meta.collection", "meta.collection.name", "meta.provider.id", "meta.workflow_name",
	"meta.workflow_tasks", "meta.granule.queryFields", "meta.reportMessageSource", "cumulus_meta.execution_name",
	"cumulus_meta.state_machine", "cumulus_meta.workflow_start_time", "cumulus_meta.sf_event_sqs_to_db_records_types",
	"cumulus_meta.asyncOperationId", "cumulus_meta.parentExecutionArn", "exception", "payload", "payload.pdr",
	"payload.pdr.name", "payload.granules", "payload.granules.0.granuleId", "payload.granules.#", "payload.running",
	"missing", "missing.x", "meta.missing", "meta.status.x", "a", "a.b", "a.b.c", "a.0", "a.0.b", "b.c", "meta.*",
	"meta\\.status", "0", "payload.0",
}

// TestMsgGetMatchesGjson checks that Msg.Get answers every path as
// gjson.Result.Get does, on the seed-3 fixtures' messages and on
// generated objects with duplicate keys, non-object sections, arrays and
// escaped keys.
func TestMsgGetMatchesGjson(t *testing.T) {
	var texts []string
	addObject := func(body []byte) {
		d, err := dla.Decode(body)
		if err != nil {
			return
		}
		if m, err := Unwrap(context.Background(), d, nil, nil); err == nil {
			texts = append(texts, m.JSON.Raw)
		}
	}
	seed := 0
	_ = filepath.WalkDir("../../testdata/cumulus-v21-seed3/archive/demo", func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				addObject(b)
				seed++
			}
		}
		return nil
	})
	if seed == 0 {
		t.Fatal("no seed-3 objects found")
	}
	if err := gen.Generate(gen.Options{Stack: "t", Count: 300, Seed: 7, Days: 3, MinGranules: 1, MaxGranules: 4},
		func(o gen.Object) error { addObject(o.Body); return nil }); err != nil {
		t.Fatal(err)
	}
	from := len(texts)
	rnd := rand.New(rand.NewSource(1))
	vals := []string{`"s"`, `1`, `null`, `true`, `{}`, `[]`, `[{"b":1},{"b":2}]`, `{"b":{"c":3},"x":1}`, `{"b":1,"b":{"c":2}}`,
		`{"status":"completed","collection":{"name":"n"}}`, `{"st\u0061tus":"esc"}`, `[1,2]`, `"x.y"`}
	keys := []string{"meta", "cumulus_meta", "payload", "exception", "a", "b", "0", "m\\u0065ta", "status"}
	for range 3000 {
		var sb strings.Builder
		sb.WriteByte('{')
		for j := range rnd.Intn(6) {
			if j > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(`"` + keys[rnd.Intn(len(keys))] + `":`)
			if rnd.Intn(3) == 0 {
				// a nested object of random keys and values
				sb.WriteByte('{')
				for k := range rnd.Intn(4) {
					if k > 0 {
						sb.WriteByte(',')
					}
					sb.WriteString(`"` + keys[rnd.Intn(len(keys))] + `":` + vals[rnd.Intn(len(vals))])
				}
				sb.WriteByte('}')
			} else {
				sb.WriteString(vals[rnd.Intn(len(vals))])
			}
		}
		sb.WriteByte('}')
		texts = append(texts, sb.String())
	}
	texts = append(texts, `[1,2]`, `"s"`, `{"meta":`, `{"a":1,"a":2}`)
	if from < 200 {
		t.Fatalf("only %d messages from the seed-3 and generated objects", from)
	}
	indexed := 0
	for _, text := range texts {
		msg := gjson.Parse(text)
		m := Index(msg)
		if m.idx != nil {
			indexed++
		}
		for _, p := range msgIndexPaths {
			want, got := msg.Get(p), m.Get(p)
			if got.Raw != want.Raw || got.Type != want.Type || got.Str != want.Str || got.Num != want.Num || got.Exists() != want.Exists() {
				t.Fatalf("%s on %s: got %q (%v), want %q (%v)", p, text, got.Raw, got.Type, want.Raw, want.Type)
			}
		}
	}
	if indexed < len(texts)/2 {
		t.Fatalf("only %d of %d messages were indexed: the test compares gjson with itself", indexed, len(texts))
	}
}
