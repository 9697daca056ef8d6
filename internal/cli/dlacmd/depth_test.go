package dlacmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// hostileDepth is the depth of the 20 MB objects that crashed search,
// stats, show and recover with a fatal stack overflow.
const hostileDepth = 10_000_000

func deepArrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// deepArchive is a local archive (stack demo) with a few generated objects
// and two objects nested 10 million levels deep: one at the top, one
// inside its string-encoded Body. It returns the stack folder, the keys of
// the generated objects and the two deep keys.
func deepArchive(t *testing.T) (string, []string, [2]string) {
	t.Helper()
	root := t.TempDir()
	store, err := archive.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var keys []string
	err = gen.Generate(gen.Options{Stack: "demo", Count: 3, Seed: 5, Days: 1, Malformed: -1, MinGranules: 1, MaxGranules: 2,
		Start: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)}, func(o gen.Object) error {
		keys = append(keys, o.Key)
		return store.Put(ctx, o.Key, o.Body)
	})
	if err != nil {
		t.Fatal(err)
	}
	deep := [2]string{"demo/dead-letter-archive/sqs/2024-03-01/deep-arrays", "demo/dead-letter-archive/sqs/2024-03-01/deep-body"}
	arrays := deepArrays(hostileDepth)
	if err := store.Put(ctx, deep[0], []byte(arrays)); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(ctx, deep[1], []byte(`{"messageId":"m-deep","Body":"`+arrays+`"}`)); err != nil {
		t.Fatal(err)
	}
	return root + "/demo", keys, deep
}

const (
	deepReason     = "object is nested deeper than 512 levels"
	deepBodyReason = "layer 1 Body is nested deeper than 512 levels"
)

func wantDeepReported(t *testing.T, stderr string, deep [2]string) {
	t.Helper()
	for i, want := range []string{deepReason, deepBodyReason} {
		if line := "dla: unreadable " + deep[i] + ": " + want + "\n"; !strings.Contains(stderr, line) {
			t.Errorf("stderr does not say %q:\n%s", line, stderr)
		}
	}
}

// An object nested 10 million levels deep is reported unreadable by name
// and reason, and every other object is still processed, by search, stats,
// show and recover (which crashed with a fatal stack overflow).
func TestDeepObjectsAreUnreadable(t *testing.T) {
	dir, keys, deep := deepArchive(t)

	t.Run("search", func(t *testing.T) {
		r := run(t, false, nil, "", "search", "--archive", dir, "--include-legacy", "-o", "keys")
		if r.code != cmdutil.ExitPartial {
			t.Fatalf("exit %d, want 3: %s", r.code, r.stderr)
		}
		wantDeepReported(t, r.stderr, deep)
		for _, k := range keys {
			if !strings.Contains(r.stdout, k+"\n") {
				t.Errorf("%s not listed:\n%s", k, r.stdout)
			}
		}
	})

	t.Run("stats", func(t *testing.T) {
		r := run(t, false, nil, "", "stats", "--archive", dir, "--include-legacy", "--by", "status", "-o", "json")
		if r.code != cmdutil.ExitPartial {
			t.Fatalf("exit %d, want 3: %s", r.code, r.stderr)
		}
		wantDeepReported(t, r.stderr, deep)
		var st struct{ Total, Unreadable, Scanned int }
		if err := json.Unmarshal(r.stdoutBytes, &st); err != nil || st.Total != len(keys) || st.Unreadable != 2 || st.Scanned != len(keys)+2 {
			t.Errorf("stats %+v (%v), want %d objects and 2 unreadable", st, err, len(keys))
		}
	})

	t.Run("show", func(t *testing.T) {
		r := run(t, false, nil, "", "show", "--archive", dir, deep[0], keys[0], deep[1])
		if r.code != cmdutil.ExitPartial {
			t.Fatalf("exit %d, want 3: %s", r.code, r.stderr)
		}
		wantDeepReported(t, r.stderr, deep)
		if !strings.Contains(r.stdout, keys[0]+"\n\nSummary") || !strings.Contains(r.stdout, "unreadable: "+deepBodyReason) ||
			!strings.Contains(r.stdout, "m-deep") {
			t.Errorf("stdout does not show the readable object and what the deep body's outer layer holds:\n%.2000s", r.stdout)
		}
		if len(r.stdout) > 1<<20 {
			t.Errorf("show printed %d bytes", len(r.stdout))
		}
		r = run(t, false, nil, "", "show", "--archive", dir, "-o", "json", deep[1], keys[0])
		var docs []showDoc
		if err := json.Unmarshal(r.stdoutBytes, &docs); err != nil || r.code != cmdutil.ExitPartial || len(docs) != 2 ||
			docs[0].Unreadable == nil || *docs[0].Unreadable != deepBodyReason || docs[1].Unreadable != nil {
			t.Errorf("show -o json: exit %d, %v, %d documents: %.500s", r.code, err, len(docs), r.stdout)
		}
	})

	t.Run("recover --dry-run", func(t *testing.T) {
		dbURL := testsupport.NewCumulusDatabase(t, gen.ReferenceSeed())
		r := run(t, false, map[string]string{"DEADLETTER_NO_PROMPT": "1"}, "", "recover", "--archive", dir, "--include-legacy",
			"--database-url", dbURL, "--offline", "--dry-run", "-o", "ndjson")
		if r.code != cmdutil.ExitPartial {
			t.Fatalf("exit %d, want 3: %s", r.code, r.stderr)
		}
		got := objectsByKey(t, r.stdout)
		for i, want := range []struct{ result, reason string }{{"unreadable", deepReason}, {"failed", deepBodyReason}} {
			o := got[deep[i]]
			if o == nil || o["result"] != want.result || o["action"] != "would move" || !strings.Contains(o["error"].(string), want.reason) {
				t.Errorf("%s: %v, want %s (%s), would move", deep[i], o, want.result, want.reason)
			}
		}
		for _, k := range keys {
			if o := got[k]; o == nil || (o["result"] != "written" && o["result"] != "dropped") {
				t.Errorf("%s: %v, want written", k, o)
			}
		}
	})
}

// show's printers bound the depth on their own: a detail output the
// decoder does not parse (the execution FAILED, so its input is the
// message) and an event nested 10 million levels deep, handed to show
// directly, are neither parsed nor indented.
func TestShowPrintersBoundDepth(t *testing.T) {
	deep := deepArrays(hostileDepth)
	detail := `{"status":"FAILED","input":"{}","output":"` + deep + `"}`
	if got, want := decodedDetail(detail), `{"status":"FAILED","input":{},"output":"`+deep+`"}`; got != want {
		t.Errorf("decodedDetail: %d bytes, want %d: the output too deep to parse must stay a string", len(got), len(want))
	}
	d := &dla.Decoded{Event: deep, Message: `{"a":` + deep + `}`}
	var out strings.Builder
	res := selection.Result{Entry: archive.Entry{Key: "k"}, Decoded: d}
	if err := renderShow(&out, lipgloss.NewRenderer(&out), false, output.EscapeFor(false), res); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "nested deeper than 512 levels: not shown"); n != 2 || out.Len() > 4096 {
		t.Errorf("%d bytes, %d notes:\n%.1000s", out.Len(), n, out.String())
	}
}

// Indenting multiplies a text by its depth: 200,000 numbers 500 levels
// down (400 KB, within the depth bound) took 200 MB indented. show prints
// such a value without indentation, with a note.
func TestShowDoesNotIndentAWideDeepValue(t *testing.T) {
	wide := strings.Repeat("[", 500) + strings.Repeat("1,", 200_000) + "1" + strings.Repeat("]", 500)
	d := &dla.Decoded{Event: wide, Message: `{"a":[1,2,3]}`}
	var out strings.Builder
	res := selection.Result{Entry: archive.Entry{Key: "k"}, Decoded: d}
	if err := renderShow(&out, lipgloss.NewRenderer(&out), false, output.EscapeFor(false), res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "shown without indentation)\n  "+wide+"\n") || out.Len() > 2*len(wide)+4096 {
		t.Errorf("%d bytes for a %d-byte value:\n%.500s", out.Len(), len(wide), out.String())
	}
	if !strings.Contains(out.String(), "  {\n    \"a\": [1, 2, 3]\n  }\n") {
		t.Errorf("a small value is no longer indented:\n%.2000s", out.String()[max(0, out.Len()-300):])
	}
}
