package dlacmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/cli/iostreams"
)

// Two recovers into two databases over one archive (the docs allow it; the
// lock is per database). Run B plans, then waits at its confirmation while
// run A recovers everything: A deletes what it wrote and moves its failure
// and the unreadable object to failed-sqs/. B then comes to each object
// after A: the written one is gone when B deletes it, the failed one when B
// moves it, the unreadable one when B reads it again. B used to report them
// "left in place" ("the move ... failed, so it stays in place: ... no such
// key"; ReadError "no such key") or "deleted" (B deleted nothing), and
// exit 3 with nothing left. Each is gone elsewhere: action "gone" on its
// line, counted apart in the summary (gone_elsewhere, and on stderr), and B
// exits 0. On S3 the store's NoSuchKey/404 says "gone", on a local folder
// os.ErrNotExist.
func TestObjectsAnotherRunMovedAreGoneElsewhereNotLeftInPlace(t *testing.T) {
	both(t, func(t *testing.T, h *hostileArchive) {
		keys := map[string]string{
			"written":    hostileRoot + "sqs/2024-03-02/written",
			"failed":     hostileRoot + "sqs/2024-03-02/failed",
			"unreadable": hostileRoot + "sqs/2024-03-02/unreadable",
		}
		h.put(keys["written"], recoverableMessage(t))
		h.put(keys["failed"], rewriteStrings(t, recoverableMessage(t), "MYD09GQ", "NOSUCHCOLLECTION"))
		h.put(keys["unreadable"], []byte("not json {"))
		dbA, dbB := hostileDB(t), hostileDB(t)
		var a runResult
		in := &swapOnRead{r: strings.NewReader("yes\n"), swap: func() {
			a = runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", dbA, "--offline", "--yes", "-o", "ndjson")
		}}
		ios, _, out, errOut := iostreams.Test()
		ios.In = in
		ios.SetTTY(true, false, true)
		getenv := func(string) string { return "" }
		ios.SetEnv(getenv)
		code := Run(context.Background(), NewFactory(ios, getenv), []string{"recover", "--archive", h.spec, "--database-url", dbB, "--offline", "-o", "ndjson"})

		// Run A did what the test needs: one object of each kind.
		aObjs := objectsByKey(t, a.stdout)
		for kind, want := range map[string]string{"written": "deleted", "failed": "moved", "unreadable": "moved"} {
			if o := aObjs[keys[kind]]; o == nil || o["action"] != want {
				t.Fatalf("run A: the %s object's line is %v, want action %q (exit %d):\n%s", kind, o, want, a.code, a.stderr)
			}
		}

		bOut := out.String()
		var sum map[string]any
		for _, o := range results(t, bOut) {
			if o["type"] == "summary" {
				sum = o
			}
		}
		for kind, key := range keys {
			o := objectsByKey(t, bOut)[key]
			if o == nil || o["action"] != "gone" {
				t.Errorf("run B: the %s object, which run A took, has the line %v; want action \"gone\"", kind, o)
			} else if !strings.Contains(strings.Join([]string{anyString(o["error"]), anyString(o["warnings"])}, " "), "another run") {
				t.Errorf("run B: the %s object's line does not say another run took it: %v", kind, o)
			}
		}
		if sum == nil {
			t.Fatalf("run B: no summary (exit %d):\n%s\n%s", code, bOut, errOut)
		}
		for field, want := range map[string]float64{"gone_elsewhere": 3, "left": 0, "failed": 0, "unreadable": 0, "deleted": 0, "moved": 0, "processed": 3, "not_processed": 0} {
			if sum[field] != want {
				t.Errorf("run B's summary: %s = %v, want %v", field, sum[field], want)
			}
		}
		if !strings.Contains(errOut.String(), "3 gone elsewhere (already moved or deleted by another run)") {
			t.Errorf("run B's summary on stderr does not count the objects gone elsewhere:\n%s", errOut)
		}
		if code != 0 {
			t.Errorf("run B exits %d, want 0: nothing is left in place and nothing of its own failed:\n%s", code, errOut)
		}
		// Nothing was lost or doubled: A's two copies in failed-sqs/, nothing in sqs/.
		var inSQS, inFailed []string
		for _, k := range h.keys() {
			switch {
			case strings.HasPrefix(k, hostileRoot+"sqs/"):
				inSQS = append(inSQS, k)
			case strings.HasPrefix(k, hostileRoot+"failed-sqs/"):
				inFailed = append(inFailed, k)
			}
		}
		if len(inSQS) != 0 || len(inFailed) != 2 {
			t.Errorf("archive after both runs: sqs/ %v, failed-sqs/ %v; want nothing and A's two copies", inSQS, inFailed)
		}
	})
}

// anyString is v as text ("" for nil).
func anyString(v any) string {
	if v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	if l, ok := v.([]any); ok {
		var parts []string
		for _, e := range l {
			parts = append(parts, anyString(e))
		}
		return strings.Join(parts, " ")
	}
	return ""
}
