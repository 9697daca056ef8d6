package dlarecover

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/golden"
)

// hostileMutations turn a Cumulus message into a hostile one: keys listed
// twice at the top, in meta, in granules and files (gjson takes the first
// along which the rest of a path resolves), escaped keys, keys gjson paths
// treat specially, non-object granules, deep nesting, a large array.
var hostileMutations = []struct {
	name string
	f    func(string) string
}{
	{"top-dup-meta", func(s string) string { return `{"meta":{"status":"running","provider":null},` + s[1:] }},
	{"top-dup-meta-string", func(s string) string { return `{"meta":"string",` + s[1:] }},
	{"top-dup-payload", func(s string) string { return `{"payload":{"pdr":{"name":"x"}},` + s[1:] }},
	{"top-dup-after", func(s string) string { return s[:len(s)-1] + `,"meta":{"status":"queued"},"payload":{"granules":[]}}` }},
	{"meta-dup", func(s string) string {
		return strings.Replace(s, `"meta":{`, `"meta":{"status":"queued","collection":{"name":"nope","version":"1"},`, 1)
	}},
	{"payload-dup", func(s string) string { return strings.Replace(s, `"payload":{`, `"payload":{"granules":[],`, 1) }},
	{"granule-dup-id", func(s string) string {
		return strings.ReplaceAll(s, `"granuleId":`, `"granuleId":"dupfirst","granuleId":`)
	}},
	{"granule-dup-files", func(s string) string {
		return strings.ReplaceAll(s, `"files":[{"bucket":"demo`, `"files":null,"files":[{"bucket":"demo`)
	}},
	{"granule-dup-status", func(s string) string {
		return strings.ReplaceAll(s, `"granuleId":`, `"status":"running","status":"completed","granuleId":`)
	}},
	{"file-dup-bucket", func(s string) string {
		return strings.ReplaceAll(s, `"bucket":"demo-`, `"bucket":null,"bucket":"demo-`)
	}},
	{"file-dup-size", func(s string) string { return strings.ReplaceAll(s, `"size":`, `"size":"big","size":`) }},
	{"escaped-keys", func(s string) string {
		s = strings.ReplaceAll(s, `"status":`, `"st\u0061tus":`)
		s = strings.ReplaceAll(s, `"granuleId":`, `"gr\u0061nuleId":`)
		s = strings.ReplaceAll(s, `"size":`, `"s\u0069ze":`)
		return strings.Replace(s, `"meta":`, `"m\u0065ta":`, 1)
	}},
	{"escaped-dup", func(s string) string {
		s = strings.Replace(s, `"meta":{`, `"meta":{"st\u0061tus":"running",`, 1)
		return strings.ReplaceAll(s, `"granuleId":`, `"gr\u0061nuleId":"escfirst","granuleId":`)
	}},
	{"escaped-top-dup", func(s string) string { return `{"p\u0061yload":{"granules":[1]},` + s[1:] }},
	{"special-top", func(s string) string {
		return `{"meta.status":"bogus","payload.granules":[],"pay*":1,"meta?":2,"#":3,"a|b":4,"@this":5,"cumulus_meta\\":6,"meta\\.status":7,"meta\u002estatus":8,"\ud800":9,"":10,` + s[1:]
	}},
	{"special-meta", func(s string) string {
		return strings.Replace(s, `"meta":{`, `"meta":{"status.x":"a","st*tus":"b","st?tus":"c","#":1,"@this":2,"collection|name":3,"status\\":4,"":5,`, 1)
	}},
	{"special-granule", func(s string) string {
		return strings.ReplaceAll(s, `"granuleId":`, `"granuleId.x":"a","granule*":"b","g?anuleId":"c","#":1,"@reverse":2,"files|0":3,"granuleId\\":4,"":5,"granuleId":`)
	}},
	{"special-file", func(s string) string {
		return strings.ReplaceAll(s, `"bucket":"demo-`, `"key.x":"a","k*y":"b","s?ze":1,"#":2,"@this":3,"bucket\\":4,"bucket":"demo-`)
	}},
	{"non-object-granules", func(s string) string {
		return strings.Replace(s, `"granules":[`, `"granules":[1,"s",null,[],true,{"granuleId":{"a":1}},`, 1)
	}},
	{"granules-object", func(s string) string { return strings.Replace(s, `"granules":[`, `"granules":{"0":1},"x":[`, 1) }},
	{"deep", func(s string) string {
		return `{"deep":` + strings.Repeat(`[`, 400) + strings.Repeat(`]`, 400) + `,` +
			strings.ReplaceAll(s[1:], `"granuleId":`, `"nest":{"a":{"b":{"c":[[[{"d":{"granuleId":"no"}}]]]}}},"granuleId":`)
	}},
	{"many-granules", func(s string) string {
		return strings.Replace(s, `"granules":[`, `"granules":[`+strings.Repeat(`{"granuleId":null},{"granuleId":"g-same","files":[]},`, 150), 1)
	}},
	{"indented", func(s string) string {
		var b bytes.Buffer
		if json.Indent(&b, []byte(s), " ", "\t") != nil {
			return s
		}
		return b.String()
	}},
}

// TestHostileMessagesMatchGolden writes an archive of hostile Cumulus
// messages (hostileMutations of generated ones, each also under a second
// key) at concurrency 1 into a fresh database, through the whole path
// (prefetch, background deletes, index, batches). The object lines, the
// summary, the tables and what is left must be those of
// testdata/hostile_messages.golden.gz (-update rewrites it). Only at
// concurrency 1: the mutations of one message share its execution and
// PDR, so at more the rows hold whichever commits last.
func TestHostileMessagesMatchGolden(t *testing.T) {
	defer func(n int) { deleteBatch = n }(deleteBatch)
	deleteBatch = 5
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	layout := dla.Layout{Stack: "s"}
	type object struct {
		key  string
		body []byte
	}
	var objects []object
	var msgs []string
	day := ""
	if err := gen.Generate(gen.Options{Stack: "s", Count: 60, Seed: 9, Days: 1, MinGranules: 1, MaxGranules: 3},
		func(o gen.Object) error {
			d, err := dla.Decode(o.Body)
			if err != nil {
				return nil
			}
			if info := layout.ParseKey(o.Key); day == "" && info.Date != "" {
				day = info.Date
			}
			m, err := recovery.Unwrap(context.Background(), d, nil, nil)
			if err == nil && strings.Contains(m.JSON.Raw, `"granuleId":`) && len(msgs) < 8 {
				msgs = append(msgs, m.JSON.Raw)
			}
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	if len(msgs) < 8 {
		t.Fatalf("only %d messages with granules generated", len(msgs))
	}
	prefix := layout.DatePrefix(dla.AreaSQS, day)
	for i, m := range msgs {
		objects = append(objects, object{fmt.Sprintf("%s%02d-plain", prefix, i), []byte(m)})
		for _, mu := range hostileMutations {
			body := mu.f(m)
			if body == m {
				t.Fatalf("mutation %s changed nothing", mu.name)
			}
			objects = append(objects, object{fmt.Sprintf("%s%02d-%s", prefix, i, mu.name), []byte(body)},
				object{fmt.Sprintf("%s%02d-%s-again", prefix, i, mu.name), []byte(body)})
		}
	}
	path := testsupport.GoldenFor(t, "testdata/hostile_messages.golden.gz")
	fx := newRunFixture(t)
	pool, store, spool := fx.pool, fx.store, fx.spool
	for _, o := range objects {
		fx.put(t, o.key, o.body)
	}
	r := &recoverRun{Store: store, Layout: layout, DB: testsupport.CumulusDB(t, pool), Pool: pool,
		Writer:      &recovery.Writer{Now: func() time.Time { return now }},
		Concurrency: 1, Now: func() time.Time { return now }, Sum: &Summary{Selected: spool.Len()}, Objects: spool}
	o := fx.outcome(t, r, selection.Scope{Layout: layout})
	if o.sum.Written == 0 || o.sum.Failed == 0 || o.sum.Deleted < 4*deleteBatch {
		t.Fatalf("the archive does not exercise writes, failures and deletes: %+v", o.sum)
	}
	if len(o.tables) < 4 {
		t.Fatalf("only %d tables dumped", len(o.tables))
	}
	golden.Check(t, path, o.text(t))
	t.Logf("%d objects: %+v", len(objects), o.sum)
}
