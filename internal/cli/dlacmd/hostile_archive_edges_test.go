package dlacmd

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// More hostile archives for issue 10 (cases that remained after the os.Root
// store, PutNew moves and the lock before the plan). Each test fails while its
// break is there; its comment says what breaks and why it matters.

// `dla recover --db-max-pool 1` hangs for ever. The archive lock is held on
// a pooled connection for the whole run (cumulusdb.LockArchive acquires it
// from the same pool), so with a pool of one the first write waits for a
// connection that is never released. The writes run on a context an
// interrupt does not cancel ("objects in flight finish"), so SIGINT and
// SIGTERM do not stop it either: only SIGKILL does, after the plan has been
// printed and the operator told it is recovering. --db-max-pool is the flag
// an operator reaches for on a database with few free connection slots.
// (Either the lock needs a connection of its own outside the pool, or the
// flag must be refused below 2.)
func TestRecoverWithAPoolOfOneDoesNotHang(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-02/one", recoverableMessage(t))
	db := hostileDB(t)
	done := make(chan runResult, 1)
	go func() {
		done <- runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", db,
			"--offline", "--yes", "--db-max-pool", "1")
	}()
	select {
	case r := <-done:
		if r.code != 0 && r.code != 2 {
			t.Errorf("exit %d: %s", r.code, r.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("recover --db-max-pool 1 of one object did not end in 30 s: the lock holds the pool's only connection and the write waits for it for ever")
	}
}

// A local archive hides every object whose name starts with ".tmp-" (the
// prefix PutNew and Put give their temporary files): search does not read
// it, stats does not count it, recover does not select it, and a date
// folder holding only such objects reads "0 matches, 0 objects" and
// "nothing to recover", exit 0. The same archive in S3 lists the object,
// and an `aws s3 sync` copy of a bucket keeps its names. The operator is
// told the archive is empty while a message sits in it. (Temporary files
// could use a name no key can have, or live outside the date folders.)
func TestLocalObjectNamedDotTmpIsVisible(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-02/.tmp-0123456789abcdef", recoverableMessage(t))
	r := run(t, false, nil, "", "search", "--archive", h.spec, "-o", "keys")
	if !strings.Contains(r.stdout, ".tmp-0123456789abcdef") {
		t.Errorf("search (exit %d) does not see the archived object sqs/2024-03-02/.tmp-0123456789abcdef:\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes")
	if _, ok := h.get(hostileRoot + "sqs/2024-03-02/.tmp-0123456789abcdef"); ok {
		t.Errorf("recover (exit %d) left the object in place without a word of it:\n%s", r.code, r.stderr)
	}
}

// A move takes "<name>.1" when the name is taken by another object, but not
// when it is taken by a folder or a symbolic link in a local archive:
// PutNew's link fails with "exists", Stat of the taken name fails ("not a
// regular file" / "a symbolic link"), and Move gives up with "exists but
// could not be looked at" instead of trying the next name. The failed
// object then stays in sqs/ on every run, and anything that can leave one
// folder or link in failed-sqs/<date>/ (an unpacked backup, a stray
// mkdir) keeps that message out of failed-sqs for good. The docs promise a
// free name is taken whenever the name is taken.
func TestMoveTakesTheNextNameWhenAFolderOrLinkHoldsTheDestination(t *testing.T) {
	for _, kind := range []string{"folder", "link"} {
		t.Run(kind, func(t *testing.T) {
			h := localHostile(t)
			h.put(hostileRoot+"sqs/2024-03-01/blocked", []byte("not json {"))
			dst := filepath.Join(filepath.Dir(h.spec), filepath.FromSlash(hostileRoot+"failed-sqs/2024-03-20/blocked"))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			var err error
			if kind == "folder" {
				err = os.Mkdir(dst, 0o755)
			} else {
				err = os.Symlink("elsewhere", dst)
			}
			if err != nil {
				t.Fatal(err)
			}
			now := func() time.Time { return time.Date(2024, 3, 20, 12, 0, 0, 0, time.UTC) }
			r := runAt(t, now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes", "-o", "ndjson")
			if _, ok := h.get(hostileRoot + "sqs/2024-03-01/blocked"); ok {
				t.Errorf("the unreadable object stays in sqs/ because a %s holds its name in failed-sqs/ (exit %d):\n%s", kind, r.code, r.stdout)
			}
			if b, ok := h.get(hostileRoot + "failed-sqs/2024-03-20/blocked.1"); !ok || string(b) != "not json {" {
				t.Errorf("no copy at failed-sqs/2024-03-20/blocked.1 (%v, %q)", ok, b)
			}
		})
	}
}

// recover does not collapse a key named twice (once short, once in full, or
// twice in a key list piped from two searches): the plan counts two
// objects, two workers take the same object, the second finds it gone and
// reports it "left ... so it stays in place: no such key". The summary says
// "1 left in place" and exits 3 while nothing is left: the object was moved.
// The docs promise the counts name exactly the objects still in place; an
// operator re-runs, or goes looking for an object that is not there.
func TestKeyNamedTwiceIsNotCountedAsLeftInPlace(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-01/bad", []byte("not json {"))
	r := runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes",
		"sqs/2024-03-01/bad", hostileRoot+"sqs/2024-03-01/bad")
	if _, ok := h.get(hostileRoot + "sqs/2024-03-01/bad"); ok {
		t.Fatalf("the object was not moved (exit %d): %s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "1 left in place") || strings.Contains(r.stdout, "stays in place") {
		t.Errorf("the object was moved, yet recover says one is left in place (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// When S3 refuses to delete a written object, recover prints "dla: written
// but not deleted KEY: ERROR" on stderr with the key unescaped: textKey
// quotes a key only when it would not read back one per line, and a C1
// control (U+009B, CSI) or a bidi override does read back. Every other
// stderr line escapes keys (stderr is for people, say the docs and
// cmdutil.Execute), so a key holding CSI sequences reaches the operator's
// terminal raw exactly when something has gone wrong. Here a proxy answers
// the delete (DeleteObject: a written object is deleted only while it holds
// what was written, one by one) with AccessDenied, as a bucket policy would.
func TestWrittenButNotDeletedKeyIsEscaped(t *testing.T) {
	e, h := hostileS3(t)
	key := hostileRoot + "sqs/2024-03-02/csi\u009b2J\u202ex"
	h.put(key, recoverableMessage(t))
	proxy := proxyS3(t)
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op != "DeleteObject" {
			return nil, nil
		}
		return nil, &testsupport.Reply{Status: 403, Body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`}
	})
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", h.spec, "--database-url", e.dbURL, "--offline", "--yes")
	if !strings.Contains(r.stderr, "written but not deleted") {
		t.Fatalf("the refused delete was not reported (exit %d):\n%s", r.code, r.stderr)
	}
	if strings.ContainsAny(r.stderr, "\u009b\u202e") {
		t.Errorf("stderr carries the key's CSI (U+009B) or RIGHT-TO-LEFT OVERRIDE raw:\n%q", r.stderr)
	}
	// Cosmetic, on the same path: item 18's singular and plural.
	if strings.Contains(r.stderr, "1 written objects") {
		t.Errorf("stderr says %q", "1 written objects could not be deleted")
	}
}

// search's "dla: unreadable KEY: WHY" lines escape control characters but
// keep a key's line breaks (output.Escape leaves \n alone), while the other
// places that print keys quote them (textKey). An archived key holding a
// newline therefore prints lines of its own choosing on stderr: here a key
// forges dla's own summary line, so the operator reads "0 unreadable".
func TestNewlineInAKeyCannotForgeAnUnreadableLine(t *testing.T) {
	h := localHostile(t)
	forged := "0 matches, 1 object read (1 B) from the archive, 0 unreadable"
	h.put(hostileRoot+"sqs/2024-03-01/x\n"+forged+"\n", []byte("bad {"))
	r := run(t, false, nil, "", "search", "--archive", h.spec)
	for _, line := range strings.Split(r.stderr, "\n") {
		if line == forged {
			t.Errorf("a key printed its own line on stderr (%q):\n%s", forged, r.stderr)
		}
	}
}

// When the delete reports a written object as NoSuchKey (it is already
// gone: a second run on another database deleted or moved it first, which
// the docs allow), recover prints "written but not deleted ... NoSuchKey"
// and exits 1 with "N written objects could not be deleted", though each
// is gone, as wanted; the operator is sent to re-run for nothing. versitygw
// answers so when two runs delete the same keys at once (seen with two
// concurrent recovers into two databases: "written but not deleted KEY:
// NoSuchKey: The specified key does not exist", both exit 1). Here a proxy
// gives that answer deterministically, to the DeleteObject that follows the
// check that the object still holds what was written. A NoSuchKey in a
// delete is the delete's goal reached.
func TestDeleteOfAnAlreadyGoneObjectIsNotAFailure(t *testing.T) {
	e, h := hostileS3(t)
	key := hostileRoot + "sqs/2024-03-02/written"
	h.put(key, recoverableMessage(t))
	proxy := proxyS3(t)
	bucket := strings.TrimSuffix(strings.TrimPrefix(h.spec, "s3://"), "/demo")
	var calls atomic.Int32
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op != "DeleteObject" {
			return nil, nil
		}
		calls.Add(1)
		// The other run's delete lands first; this one then finds nothing.
		if _, err := e.s3.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
			t.Error(err)
		}
		return nil, &testsupport.Reply{Status: 404, Body: `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`}
	})
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", h.spec, "--database-url", e.dbURL, "--offline", "--yes")
	if _, ok := h.get(key); ok || calls.Load() == 0 {
		t.Fatalf("the written object is still there or DeleteObject was not called (exit %d): %s", r.code, r.stderr)
	}
	if r.code != 0 || strings.Contains(r.stderr, "not deleted") {
		t.Errorf("the object is gone, yet recover exits %d and says:\n%s", r.code, r.stderr)
	}
}

// show and recover take a local path (relative to the current directory) as
// naming that file, but a relative path that also reads as a key
// ("sqs/<date>/<name>", "dead-letter-archive/...", "<stack>/dead-letter-
// archive/...") is taken as the key in the --archive (or DLA_ARCHIVE)
// archive, without looking at the file named. An operator standing in a
// second copy of the archive (a backup, a colleague's download) who names
// the file in front of them acts on the other archive's object of the same
// name: here recover writes and deletes archive A's object while the path
// named a file of archive B. It is the local twin of s3://OTHER-BUCKET
// (TestS3URLOfAnotherBucketIsRefused): a path that exists and lies outside the
// archive should be refused, as an absolute or ./ path is.
func TestRelativePathOfAnotherArchiveDoesNotActOnTheArchive(t *testing.T) {
	a, b := localHostile(t), localHostile(t)
	a.put(hostileRoot+"sqs/2024-03-02/one", recoverableMessage(t))
	b.put(hostileRoot+"sqs/2024-03-02/one", recoverableMessage(t))
	t.Chdir(filepath.Join(b.spec, "dead-letter-archive"))
	if _, err := os.Stat("sqs/2024-03-02/one"); err != nil {
		t.Fatal(err)
	}
	r := runAt(t, time.Now, noPrompt, "", "recover", "--archive", a.spec, "--database-url", hostileDB(t), "--offline", "--yes",
		"sqs/2024-03-02/one")
	if _, ok := a.get(hostileRoot + "sqs/2024-03-02/one"); !ok {
		t.Errorf("recover of the path sqs/2024-03-02/one (a file of archive B, in the current directory) deleted archive A's object of that key (exit %d):\n%s",
			r.code, r.stdout)
	}
}

// recover's summary line "  stopped: WHY" prints the error that stopped the
// run unescaped on stderr (writeSummary), while the final "dla: stopped:"
// line is escaped. The stopping error can quote the archive: here an
// archived message's `replace` names a key holding an OSC window-title
// sequence and a clear-screen code, and S3 answers 500 for it (an outage,
// which stops the run); the error names the key, and the summary line
// carries ESC to the operator's terminal (item 14).
func TestStoppedLineInSummaryIsEscaped(t *testing.T) {
	e, h := hostileS3(t)
	bucket := strings.TrimSuffix(strings.TrimPrefix(h.spec, "s3://"), "/demo")
	h.put(hostileRoot+"sqs/2024-03-01/held", replaceEvent(t, "held", bucket, "payload\x1b]0;pwned\x07\x1b[2J"))
	target, err := url.Parse(testsupport.S3Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "payload") {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(500)
			io.WriteString(w, `<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", h.spec, "--database-url", e.dbURL, "--yes", "-o", "ndjson")
	if !strings.Contains(r.stderr, "stopped") {
		t.Fatalf("the run was not stopped (exit %d):\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "\x1b") {
		t.Errorf("stderr carries a raw ESC from the archive:\n%q", r.stderr)
	}
}
