package dlacmd

// Adversarial tests of dla recover --via-api. Each test runs
// against versitygw S3 and the fake Cumulus API.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cumulusapi"
	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/workflow/apirecover"
)

// diffArchive names what differs between two snapshots.
func diffArchive(before, after map[string]string) []string {
	var d []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			d = append(d, "+"+k)
		} else if w != v {
			d = append(d, "~"+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d = append(d, "-"+k)
		}
	}
	sort.Strings(d)
	return d
}

// DEFECT (fixed; the test now guards the fix): a staging move that fails midway (the copy is in staging, the
// original could not be deleted) is "moved back" by unstage with
// archive.Move onto the original's key, which is still there; Move never
// replaces, so the staged copy lands at <key>.1: the archive gains a second
// copy of the message, which the next recovery writes twice (or a second
// failed-sqs object). The abort should leave the archive as it was: a staged
// copy whose original still holds the same bytes is a redundant copy, to be
// deleted, not moved to a new name.
func TestViaAPIStagingDeleteFailureLeavesNoDuplicate(t *testing.T) {
	e := newViaAPIEnv(t)
	proxy := proxyS3(t)
	var deletes atomic.Int32
	proxy.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		// The third object's delete is refused (not retried by the SDK);
		// everything else, the way back included, works.
		if op == "DeleteObject" && deletes.Add(1) == 3 {
			return nil, &testsupport.Reply{Status: 403, Body: "<Error><Code>AccessDenied</Code><Message>injected</Message></Error>"}
		}
		return nil, nil
	})
	r := e.recover(t, testAPIToken, "--date", "2024-03-02", "--yes")
	if r.code == 0 || !strings.Contains(r.stderr, "could not be deleted") {
		t.Fatalf("the fault did not hit a staging delete (vacuous): exit %d: %s", r.code, r.stderr)
	}
	if len(e.api.Posts()) != 0 {
		t.Fatalf("Cumulus was asked after a failed staging: %v", e.api.Posts())
	}
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
		t.Errorf("after an aborted staging the archive is not as it was: %v\nstderr: %s", d, r.stderr)
	}
}

// DEFECT (fixed; the test now guards the fix): the POST that starts Cumulus's recovery is answered 5xx (an API
// Gateway 502/504, or a lost reply) although Cumulus did start the
// operation. After the retries dla concludes "nothing was recovered" and
// moves the staged objects back while the operation it started is working
// on them: a message Cumulus writes (or moves to failed-sqs) is also back at
// its key, and dla told the operator nothing was recovered. After an
// ambiguous start dla must not move staging back (leave it, name the folder,
// say the operation may be running, and how to clean up once it ended).
func TestViaAPIPostReplyLostDoesNotUnstageUnderCumulus(t *testing.T) {
	e := newViaAPIEnv(t)
	started := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	e.api.RunningPolls = 0
	e.api.Written = func(_ string, raw []byte) bool {
		once.Do(func() { close(started) })
		<-release
		return !strings.Contains(string(raw), "KnexTimeoutError")
	}
	target, _ := url.Parse(e.api.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	var first atomic.Bool
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r) // Cumulus starts the operation
		if first.CompareAndSwap(false, true) {
			select { // the operation has read its first object
			case <-started:
			case <-time.After(20 * time.Second):
			}
		}
		w.WriteHeader(http.StatusGatewayTimeout)
		io.WriteString(w, `{"message":"Endpoint request timed out"}`)
	}))
	defer gw.Close()
	e.api.URL = gw.URL // recover() takes the URL from here

	r := e.recover(t, testAPIToken, "--date", "2024-03-02", "--yes")
	close(release)
	posts := e.api.Posts()
	if len(posts) == 0 {
		t.Fatalf("no operation started (vacuous): exit %d: %s", r.code, r.stderr)
	}
	// Wait for every operation Cumulus started to end.
	c := &cumulusapi.Client{BaseURL: target.String(), Token: testAPIToken}
	recovered := 0
	for i := range posts {
		op, err := c.AsyncOperation(context.Background(), "op-"+strconv.Itoa(i+1))
		if err != nil {
			t.Fatal(err)
		}
		var out cumulusapi.RecoveryOutput
		_ = json.Unmarshal([]byte(op.Output), &out)
		recovered += len(out.ProcessingSucceededKeys) + len(out.ProcessingFailedKeys)
	}
	after := e.snapshot(t)
	var both []string
	for k := range e.before {
		if !strings.Contains(k, "/sqs/2024-03-02/") {
			continue
		}
		name := k[strings.LastIndexByte(k, '/')+1:]
		_, back := after[k]
		inFailed := false
		for a := range after {
			if strings.Contains(a, "/failed-sqs/") && strings.HasSuffix(a, "/"+name) {
				if _, was := e.before[a]; !was {
					inFailed = true
				}
			}
		}
		if back && inFailed {
			both = append(both, name)
		}
	}
	if strings.Contains(r.stderr, "nothing was recovered") && recovered > 0 {
		t.Errorf("dla said nothing was recovered and moved staging back, yet the %d operation(s) it started processed %d objects; "+
			"now both in failed-sqs and back at their keys: %v\nstderr: %s", len(posts), recovered, both, r.stderr)
	}
}

// PROPERTY (no loss): an object re-archived at its original key while its
// old copy sits in staging is not overwritten by --cleanup; the staged copy
// goes to a free name beside it, and both messages survive byte for byte.
func TestViaAPICleanupKeepsReArchivedObject(t *testing.T) {
	e := newViaAPIEnv(t)
	// An object dla reads and Cumulus cannot parse (a byte order mark before
	// its JSON, which JSON.parse refuses): it goes to staging and stays.
	victim := bomVictim(t, e, "2024-03-03")
	const fresh = `{"time":"2024-03-03T10:00:00Z","body":"re-archived meanwhile"}`
	store := archive.NewS3(e.c, e.bucket)
	var once sync.Once
	written := e.api.Written
	e.api.Written = func(k string, raw []byte) bool {
		once.Do(func() { // while Cumulus runs, the archiver writes the key again
			if err := store.Put(context.Background(), victim, []byte(fresh)); err != nil {
				t.Error(err)
			}
		})
		return written(k, raw)
	}
	r := e.recover(t, testAPIToken, "--date", "2024-03-03", "--yes", "--cleanup")
	if r.code != 3 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	after := e.snapshot(t)
	if after[victim] != fresh {
		t.Errorf("the re-archived object at %s was overwritten", victim)
	}
	found := false
	for k, v := range after {
		if k != victim && strings.HasPrefix(k, victim) && v == e.before[victim] {
			found = true
		}
	}
	if !found {
		t.Errorf("the staged copy of %s is lost: %v", victim, diffArchive(e.before, after))
	}
	for k := range after {
		if strings.Contains(k, "recover-staging/") {
			t.Errorf("%s left in staging after --cleanup", k)
		}
	}
}

// PROPERTY (no loss): keys given on stdin with -0 that hold a space, '+',
// '%', unicode, a newline, a tab and 200 bytes go into staging and, after a
// failed operation, back to exactly their keys with --cleanup, byte for byte;
// nothing else changes.
func TestViaAPIHostileKeysRoundTrip(t *testing.T) {
	e := newViaAPIEnv(t)
	e.api.FailOperation = true
	store := archive.NewS3(e.c, e.bucket)
	var src string
	for k, v := range e.before {
		if strings.Contains(k, "/sqs/2024-03-02/") && json.Valid([]byte(v)) {
			src = v
			break
		}
	}
	names := []string{"a b", "a+b", "a%2Fb%", "é✓-ü", "new\nline", "tab\tx", strings.Repeat("L", 200)}
	var stdin strings.Builder
	for _, n := range names {
		k := "demo/dead-letter-archive/sqs/2024-03-02/" + n
		if err := store.Put(context.Background(), k, []byte(src)); err != nil {
			t.Fatalf("%q: %v", k, err)
		}
		stdin.WriteString(k + "\x00")
	}
	e.before = e.snapshot(t)
	r := e.recoverIn(t, context.Background(), stdin.String(), "-0", "-", "--yes", "--cleanup", "-o", "json")
	if r.code != 1 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res apirecover.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v: %q", err, r.stdout)
	}
	// The key with '%' is left out (Cumulus's unencoded copy source would
	// make S3 copy another key's object); the others go and come back.
	if res.Staged != len(names)-1 || res.MovedBack != len(names)-1 || len(res.LeftOut) != 1 || !strings.HasSuffix(res.LeftOut[0].Key, "a%2Fb%") {
		t.Errorf("result %+v for %d keys", res, len(names))
	}
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
		t.Errorf("hostile keys did not come back to their keys: %q", d)
	}
}

// PROPERTY (no loss): two via-api runs at once over overlapping selections
// (one date, and the same date's keys on stdin) lose nothing: every selected
// object ends written (gone), at its failed-sqs key, or back at its key, and
// nothing outside the selection changes. (No duplicate is asserted absent
// here: see TestViaAPIConcurrentStagingDoesNotDoubleAnObject.)
func TestViaAPIOverlappingRunsLoseNothing(t *testing.T) {
	e := newViaAPIEnv(t)
	var keys strings.Builder
	for k := range e.before {
		if strings.Contains(k, "/sqs/2024-03-03/") {
			keys.WriteString(k + "\n")
		}
	}
	var wg sync.WaitGroup
	rs := make([]runResult, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		rs[0] = e.recoverIn(t, context.Background(), "", "--date", "2024-03-03", "--yes", "--cleanup")
	}()
	go func() {
		defer wg.Done()
		rs[1] = e.recoverIn(t, context.Background(), keys.String(), "-", "--yes", "--cleanup")
	}()
	wg.Wait()
	after := e.snapshot(t)
	for k, body := range e.before {
		if !strings.Contains(k, "/sqs/2024-03-03/") {
			if after[k] != body {
				t.Errorf("%s is outside the selection, yet it changed", k)
			}
			continue
		}
		name := k[strings.LastIndexByte(k, '/')+1:]
		found := !json.Valid([]byte(body)) && after[k] == body
		if json.Valid([]byte(body)) && !strings.Contains(body, "KnexTimeoutError") {
			found = true // written by Cumulus (or back: checked below as a copy)
		}
		for a, v := range after {
			if v == body && (a == k || strings.HasSuffix(a, "/"+name) || strings.HasPrefix(a, k+".")) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s is lost\nrun 1 (exit %d): %s\nrun 2 (exit %d): %s", k, rs[0].code, rs[0].stderr, rs[1].code, rs[1].stderr)
		}
	}
	for k := range after {
		if strings.Contains(k, "recover-staging/") {
			t.Errorf("%s left in staging after --cleanup", k)
		}
	}
	t.Logf("run 1 exit %d, run 2 exit %d; archive changes: %q", rs[0].code, rs[1].code, diffArchive(e.before, after))
}

// DEFECT (fixed; the test now guards the fix): two via-api runs at once over the same object. Run A copies K
// into its staging and, before it deletes K, run B moves K into its own
// staging. A's delete finds K gone and archive.Move counts that as done
// (DeleteCheckedBody: nil when gone), so K is now in both staging folders:
// Cumulus recovers it twice, and when both are moved back (here: A's
// operation fails and --cleanup, then B's --cleanup-staging) the archive
// holds K and K.1, a doubled message. Staging should treat "the original
// vanished before our delete" as not ours (drop the copy, or stop), and
// via-api runs of one archive should exclude each other as local recoveries
// do. The other run is played by the same moves a second dla would make,
// at the moment the race needs.
func TestViaAPIConcurrentStagingDoesNotDoubleAnObject(t *testing.T) {
	e := newViaAPIEnv(t)
	e.api.FailOperation = true
	proxy := proxyS3(t)
	direct := archive.NewS3(e.c, e.bucket)
	const otherRun = "demo/dead-letter-archive/recover-staging/20240101T000000Z-0ther000/"
	var raced string
	proxy.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		if op != "HeadObject" || raced != "" {
			return nil, nil
		}
		func() {
			var staged []string
			_ = direct.List(context.Background(), "demo/dead-letter-archive/recover-staging/", false, func(en archive.Entry) error {
				if strings.Contains(en.Key, "/sqs/") { // not a run's manifest
					staged = append(staged, en.Key)
				}
				return nil
			})
			if len(staged) != 1 { // not yet the first staging delete
				return
			}
			rest := staged[0][strings.Index(staged[0], "/sqs/")+1:]
			raced = "demo/dead-letter-archive/" + rest
			if _, err := archive.Move(context.Background(), direct, raced, otherRun+rest); err != nil {
				t.Error(err)
			}
		}()
		return nil, nil
	})
	r := e.recoverIn(t, context.Background(), "", "--date", "2024-03-02", "--yes", "--cleanup")
	if raced == "" {
		t.Fatalf("the race was not played (vacuous): exit %d: %s", r.code, r.stderr)
	}
	proxy.SetHook(nil)
	r2 := e.recoverIn(t, context.Background(), "", "--cleanup-staging", otherRun)
	after := e.snapshot(t)
	if d := diffArchive(e.before, after); len(d) != 0 {
		t.Errorf("after both runs moved their staging back the archive is not as it was: %q\nrun A (exit %d): %s\nrun B cleanup (exit %d): %s",
			d, r.code, r.stderr, r2.code, r2.stderr)
	}
}

// DEFECT (fixed; the test now guards the fix): Ctrl-C during staging, just as an object's copy lands in staging:
// the move stops before the original is deleted, stage() then moves the
// staged copy "back" onto the original's key, which is still there, so it
// lands at <key>.1. After an interrupted staging the archive holds a doubled
// message (same cause as TestViaAPIStagingDeleteFailureLeavesNoDuplicate).
func TestViaAPICancelDuringStagingLeavesNoDuplicate(t *testing.T) {
	e := newViaAPIEnv(t)
	proxy := proxyS3(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var puts atomic.Int32
	proxy.SetAfter(func(op string, _, resp []byte) []byte {
		if op == "PutObject" && puts.Add(1) == 3 { // the third copy is stored: Ctrl-C
			cancel()
		}
		return resp
	})
	r := e.recoverIn(t, ctx, "", "--date", "2024-03-02", "--yes", "--cleanup")
	if puts.Load() < 3 {
		t.Fatalf("staging never reached its third copy (vacuous): exit %d: %s", r.code, r.stderr)
	}
	if r.code != 130 {
		t.Errorf("exit %d after Ctrl-C, want 130", r.code)
	}
	if len(e.api.Posts()) != 0 {
		t.Errorf("Cumulus was asked after Ctrl-C during staging")
	}
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
		t.Errorf("after Ctrl-C during staging the archive is not as it was: %q\nstderr: %s", d, r.stderr)
	}
}

// DEFECT (the hint), with a no-loss PROPERTY: Ctrl-C while a poll (GET
// /asyncOperations/{id}) is in flight. run() takes the GET's context error
// for an API failure and returns "...; the operation may still be running
// ... staging FOLDER"; Execute turns any error after Ctrl-C into exit 130
// and prints only "dla: interrupted", so the operator is told neither that
// the operation goes on nor the --cleanup-staging command (the select on
// ctx.Done() prints it only when Ctrl-C falls between polls). The rest
// holds: nothing is moved back under the running operation, and
// --cleanup-staging later restores the archive byte for byte.
func TestViaAPICancelDuringPollingSaysHowToCleanUp(t *testing.T) {
	e := newViaAPIEnv(t)
	e.api.FailOperation = true // Cumulus processes nothing: all stays in staging
	e.api.RunningPolls = 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.api.URL = cancelAtFirstPoll(t, e.api.URL, cancel)
	r := e.recoverIn(t, ctx, "", "--date", "2024-03-02", "--yes", "--cleanup", "-o", "json")
	if r.code != 130 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "--cleanup-staging") {
		t.Errorf("Ctrl-C during a poll: no word that the operation goes on, nor how to clean up:\n%s", r.stderr)
	}
	staging := e.api.Posts()[0]["path"].(string)
	mid := e.snapshot(t)
	n := 0
	for k := range mid {
		if strings.HasPrefix(k, staging) {
			n++
		}
	}
	if n != 12 {
		t.Errorf("%d objects in staging after Ctrl-C during polling, want all 12", n)
	}
	r = e.recoverIn(t, context.Background(), "", "--cleanup-staging", staging)
	if r.code != 0 {
		t.Fatalf("--cleanup-staging: exit %d: %s", r.code, r.stderr)
	}
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
		t.Errorf("after --cleanup-staging: %q", d)
	}
}

// cancelAtFirstPoll is a gateway to the API at apiURL that calls cancel
// (Ctrl-C) at the first poll of an operation, not at the check before
// staging; it returns the gateway's URL.
func cancelAtFirstPoll(t *testing.T, apiURL string, cancel func()) string {
	target, _ := url.Parse(apiURL)
	rp := httputil.NewSingleHostReverseProxy(target)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/asyncOperations/") {
			cancel()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(gw.Close)
	return gw.URL
}

// DEFECT (minor), with a PROPERTY: --cleanup-staging must refuse anything
// but one run's folder under this archive's recover-staging/. sqs/, the
// staging root, a nested folder, another stack's staging are refused, and
// nothing changes. But "<root>recover-staging/.." passes the check at
// viaapi.go (run == "../" has one '/'), is listed as a literal prefix and
// ends with exit 0 and no word: a usage error is due (and on a file-system
// backed store the prefix could resolve to the archive root).
func TestViaAPICleanupStagingRefusesForeignPrefixes(t *testing.T) {
	e := newViaAPIEnv(t)
	for _, p := range []string{
		"demo/dead-letter-archive/sqs/2024-03-02/",
		"demo/dead-letter-archive/recover-staging/",
		"demo/dead-letter-archive/recover-staging/../sqs/",
		"demo/dead-letter-archive/recover-staging/..",
		"demo/dead-letter-archive/recover-staging/a/sqs/",
		"other/dead-letter-archive/recover-staging/r/",
		"demo/dead-letter-archive/recover-staging//",
		"demo/dead-letter-archive/",
		"",
	} {
		r := e.recoverIn(t, context.Background(), "", "--cleanup-staging", p)
		if p == "" {
			continue // no flag: an ordinary run without --yes, refused for want of a selection/confirmation
		}
		if r.code == 0 {
			t.Errorf("--cleanup-staging %q accepted: %s", p, r.stderr)
		}
	}
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
		t.Errorf("refused --cleanup-staging changed the archive: %q", d)
	}
}

// PROPERTY: a token file that is a directory, empty, or only blanks is a
// usage error before anything is staged.
func TestViaAPIRefusesBadTokenFiles(t *testing.T) {
	e := newViaAPIEnv(t)
	dir := t.TempDir()
	empty := dir + "/empty"
	blank := dir + "/blank"
	for f, b := range map[string]string{empty: "", blank: " \n\t\n"} {
		if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tf := range []string{dir, empty, blank, dir + "/missing"} {
		r := e.recoverIn(t, context.Background(), "", "--date", "2024-03-02", "--yes", "--token-file", tf)
		if r.code != 2 {
			t.Errorf("--token-file %s: exit %d: %s", tf, r.code, r.stderr)
		}
	}
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 || len(e.api.Posts()) != 0 {
		t.Errorf("a refused token file staged or started something: %q", d)
	}
}

// PROPERTY: --dry-run stages nothing and asks Cumulus nothing; a run whose
// every object is written exits 0 with its JSON summary on stdout (-o json),
// the staging folder empty and the selection gone, nothing else changed.
func TestViaAPIDryRunStagesNothingAndAFullRunClearsTheSelection(t *testing.T) {
	e := newViaAPIEnv(t)
	e.api.Written = nil
	r := e.recoverIn(t, context.Background(), "", "--date", "2024-03-02", "--dry-run", "-o", "json")
	if r.code != 0 || len(e.api.Posts()) != 0 {
		t.Fatalf("dry run: exit %d, posts %v: %s", r.code, e.api.Posts(), r.stderr)
	}
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
		t.Fatalf("--dry-run changed the archive: %q", d)
	}
	r = e.recoverIn(t, context.Background(), "", "--date", "2024-03-02", "--yes", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var res apirecover.Result
	if json.Unmarshal([]byte(r.stdout), &res) != nil || res.Succeeded != 12 || res.Staged != 12 || res.Status != "SUCCEEDED" || len(res.Left) != 0 {
		t.Errorf("stdout %q", r.stdout)
	}
	after := e.snapshot(t)
	for k, v := range e.before {
		_, still := after[k]
		if strings.Contains(k, "/sqs/2024-03-02/") == still || (still && after[k] != v) {
			t.Errorf("%s: still there %v", k, still)
		}
	}
	if len(after) != len(e.before)-12 {
		t.Errorf("archive changes: %q", diffArchive(e.before, after))
	}
}

// DEFECT (fixed; the test now guards the fix): -o ndjson prints the via-api summary as indented JSON over 12
// lines (viaAPIFinish calls output.WriteJSON, MarshalIndent, for json and
// ndjson alike); a line-by-line consumer (jq -c, a log shipper) sees 12
// broken records. Want one line: the local recover's ndjson stream writes
// one record a line.
func TestViaAPINDJSONIsOneLine(t *testing.T) {
	e := newViaAPIEnv(t)
	e.api.Written = nil
	r := e.recoverIn(t, context.Background(), "", "--date", "2024-03-02", "--yes", "-o", "ndjson")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for i, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("-o ndjson line %d is not a JSON record: %q", i+1, l)
		}
	}
}

// DEFECT (minor), with a no-loss PROPERTY: --cleanup cannot move an object
// back (S3 refuses the write): the object stays in staging, safe, and is
// listed, but the "move them back with: ... --cleanup-staging FOLDER" line
// is printed only without --cleanup (viaAPIFinish: !opts.Cleanup), so the
// operator who asked for the clean-up is not told how to finish it.
func TestViaAPICleanupFailureSaysHowToFinish(t *testing.T) {
	e := newViaAPIEnv(t)
	bomVictim(t, e, "2024-03-03") // staged, and left there by Cumulus
	proxy := proxyS3(t)
	selected := 0 // staged: what dla can read (the unparseable one is left out)
	for k, v := range e.before {
		if strings.Contains(k, "/sqs/2024-03-03/") && (json.Valid([]byte(v)) || strings.HasPrefix(v, "\ufeff")) {
			selected++
		}
	}
	var puts atomic.Int32
	proxy.SetHook(func(op string, _ []byte) ([]byte, *testsupport.Reply) {
		// The manifest's and staging's copies pass; the clean-up's (after
		// Cumulus, which writes directly) are refused.
		if op == "PutObject" && int(puts.Add(1)) > selected+1 {
			return nil, &testsupport.Reply{Status: 403, Body: "<Error><Code>AccessDenied</Code><Message>injected</Message></Error>"}
		}
		return nil, nil
	})
	// --no-audit: the puts counted are the manifest's and staging's.
	r := e.recoverIn(t, context.Background(), "", "--date", "2024-03-03", "--yes", "--cleanup", "--no-audit")
	if r.code != 3 || !strings.Contains(r.stderr, "left in staging") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	after := e.snapshot(t)
	for k, v := range e.before {
		if strings.Contains(k, "/sqs/2024-03-03/") && strings.HasPrefix(v, "\ufeff") {
			found := false
			for a, w := range after {
				if strings.Contains(a, "recover-staging/") && w == v {
					found = true
				}
			}
			if !found {
				t.Errorf("%s (unparseable, clean-up refused) is nowhere", k)
			}
		}
	}
	if !strings.Contains(r.stderr, "--cleanup-staging") {
		t.Errorf("the clean-up failed, and nothing says how to finish it:\n%s", r.stderr)
	}
}

// PROPERTY: the same key twice on stdin is staged once (or the run stops
// with the archive as it was): nothing is lost or doubled.
func TestViaAPIDuplicateStdinKeyIsStagedOnce(t *testing.T) {
	e := newViaAPIEnv(t)
	e.api.FailOperation = true
	var k string
	for key := range e.before {
		if strings.Contains(key, "/sqs/2024-03-02/") {
			k = key
			break
		}
	}
	r := e.recoverIn(t, context.Background(), k+"\n"+k+"\n", "-", "--yes", "--cleanup")
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
		t.Errorf("exit %d, archive changes %q: %s", r.code, d, r.stderr)
	}
	t.Logf("exit %d: %s", r.code, r.stderr)
}

// DEFECT (fixed; the test now guards the fix): "the token is never printed" holds only while the API does not
// echo it. A gateway or proxy in front of Cumulus that quotes the request's
// Authorization header in its error body (some do, for a malformed or
// rejected header) gets the token printed on stderr: cumulusapi.call puts
// snippet(body) into the error unredacted (client.go, the 401/403 and
// StatusError cases). The client knows the token; it should blank it out
// of every text it returns.
func TestViaAPITokenEchoedByGatewayIsNotPrinted(t *testing.T) {
	e := newViaAPIEnv(t)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"message":"Unauthorized: rejected Authorization header '`+r.Header.Get("Authorization")+`'"}`)
	}))
	defer gw.Close()
	e.api.URL = gw.URL
	r := e.recoverIn(t, context.Background(), "", "--date", "2024-03-02", "--yes") // fails the test if the token is printed
	if r.code == 0 {
		t.Errorf("exit 0 after a 401")
	}
	if d := diffArchive(e.before, e.snapshot(t)); len(d) != 0 {
		t.Errorf("after a 401 the archive is not as it was: %q", d)
	}
}

// bomVictim puts, in the date folder, a copy of one of its valid objects
// behind a byte order mark: dla reads it, Cumulus's JSON.parse does not, so
// a --via-api run stages it and Cumulus leaves it in staging. It returns its
// key, with e.before taken again.
func bomVictim(t *testing.T, e *viaAPIEnv, date string) string {
	t.Helper()
	var body string
	for k, v := range e.before {
		if strings.Contains(k, "/sqs/"+date+"/") && json.Valid([]byte(v)) {
			body = v
			break
		}
	}
	key := "demo/dead-letter-archive/sqs/" + date + "/bom-victim"
	if err := archive.NewS3(e.c, e.bucket).Put(context.Background(), key, []byte("\ufeff"+body)); err != nil {
		t.Fatal(err)
	}
	e.before = e.snapshot(t)
	return key
}
