package dlacmd

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// Hostile archives for issue 10 that broke recover, search or show after the
// first issue 10 fixes. Each test failed while its break was there; each comment
// says what the break was, and the test keeps it from coming back.

// recoverableMessage is a message recover writes (with the reference seed).
func recoverableMessage(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(sampleArchive + "/dead-letter-archive/sqs/2024-03-02/49373414-fb81-4e23-8da5-91186042e9bf-cacb018c-3384-4861-9511-6bd766e32aef")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recoverOne recovers a local archive of one recoverable object, which
// must exit 0.
func recoverOne(t *testing.T) (*hostileArchive, runResult) {
	t.Helper()
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-02/one", recoverableMessage(t))
	r := runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	return h, r
}

// Two distinct archive objects that happen to hold the same bytes (the same
// message dead-lettered on two days) and share a basename: recover moves the
// first to failed-sqs/<date>/dup.json, finds the second's destination "already
// holding its bytes", takes it for an earlier copy and deletes the second
// object. Two objects in, one out; the summary says "2 moved".
func TestIdenticalObjectsStayTwoInFailedSqs(t *testing.T) {
	both(t, func(t *testing.T, h *hostileArchive) {
		h.put(hostileRoot+"sqs/2024-03-01/dup.json", []byte("not json"))
		h.put(hostileRoot+"sqs/2024-03-02/dup.json", []byte("not json"))
		r := runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t),
			"--offline", "--yes", "-o", "ndjson")
		if r.code != 3 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var n int
		for _, k := range h.keys() {
			if strings.HasPrefix(k, hostileRoot) && !isAuditKey(k) { // the run's own record aside
				n++
			}
		}
		if n != 2 {
			t.Fatalf("two objects went in, %d came out: %q\n%s", n, h.keys(), r.stderr)
		}
	})
}

// Recovering every object of a local archive deletes the folders left
// empty up to the folder above the stack: dead-letter-archive/ and the
// <stack>/ folder itself, which are outside <stack>/dead-letter-archive/.
// The next command then fails with "no such file or directory" for the
// archive the operator gave.
func TestRecoverKeepsTheStackFolder(t *testing.T) {
	h, _ := recoverOne(t)
	if _, err := os.Stat(filepath.Join(h.spec, "dead-letter-archive")); err != nil {
		t.Errorf("recover removed the archive's own folder: %v", err)
	}
	if _, err := os.Stat(h.spec); err != nil {
		t.Errorf("recover removed the stack folder %s (outside <stack>/dead-letter-archive/): %v", h.spec, err)
	}
}

// A key given as s3://OTHER-BUCKET/... is silently taken as the same key in
// the --archive bucket: recover writes and deletes an object the operator
// did not name (the one in the archive's bucket), and show shows it.
func TestS3URLOfAnotherBucketIsRefused(t *testing.T) {
	e := newRecoverEnv(t, nil, nil)
	h := s3Hostile(t, e.s3)
	other := testsupport.NewBucket(t, e.s3)
	key := hostileRoot + "sqs/2024-03-02/same-name"
	h.put(key, recoverableMessage(t))
	if _, err := e.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(other), Key: aws.String(key),
		Body: bytes.NewReader(recoverableMessage(t))}); err != nil {
		t.Fatal(err)
	}
	r := runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes",
		"s3://"+other+"/"+key)
	if _, ok := h.get(key); !ok {
		t.Errorf("named s3://%s/%s, but recover (exit %d) deleted s3://%s/%s instead:\n%s",
			other, key, r.code, strings.TrimSuffix(strings.TrimPrefix(h.spec, "s3://"), "/demo"), key, r.stderr)
	}
	if r.code == 0 {
		t.Errorf("a key in another bucket was accepted (exit 0), want a refusal")
	}
}

// `dla search -o keys` on a terminal prints archive keys raw: a key holding
// an OSC window-title sequence and a clear-screen code reaches the terminal
// (item 14: on a TTY, escape every value that came from the archive).
func TestKeysOnATerminalAreEscaped(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-02/esc\x1b]0;PWNED\x07title\x1b[2J", recoverableMessage(t))
	for _, args := range [][]string{{"-o", "keys"}, {"-o", "keys", "-0"}} {
		r := run(t, true, nil, "", append([]string{"search", "--archive", h.spec, "--date", "2024-03-02"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		if bad := rawControls(r.stdout); len(bad) > 0 {
			t.Errorf("search %v on a terminal printed %v raw: %q", args, bad, r.stdout)
		}
	}
}

// An unreadable legacy object (outside any date folder) cannot be dated,
// yet a selection of any one date, even a date with no objects at all,
// moves it to failed-sqs.
func TestUndatableLegacyObjectIsNotMovedForADate(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/legacy-bad.json", []byte("not json"))
	r := runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline",
		"--yes", "--include-legacy", "--date", "2031-01-01", "-o", "ndjson")
	if _, ok := h.get(hostileRoot + "sqs/legacy-bad.json"); !ok {
		t.Errorf("--date 2031-01-01 moved the undatable legacy object (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The docs promise that If-None-Match: * makes S3 itself refuse a name taken
// between the HEAD and the copy. The test S3 server (versitygw) ignores
// If-None-Match on CopyObject (it honours it on PutObject), so an object put
// at the destination in between (a second dla run on another database, or
// on another host) is overwritten, and Move then deletes the source: the
// other object is lost.
func TestMoveDoesNotOverwriteANameTakenBetweenHeadAndCopy(t *testing.T) {
	c := testsupport.S3Client(t)
	bucket := testsupport.NewBucket(t, c)
	ctx := context.Background()
	put := func(key, body string) {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	src, dst := hostileRoot+"sqs/2024-03-01/x", hostileRoot+"failed-sqs/2024-03-01/x"
	put(src, "mine")
	var once sync.Once
	racing := s3.New(c.Options(), func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("race", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if middleware.GetOperationName(ctx) == "PutObject" { // the move's write (CopyObject before PutNew)
					once.Do(func() { put(dst, "the other run's object") }) // taken after the HEAD
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
		})
	})
	store := archive.Contain(archive.NewS3(racing, bucket), hostileRoot)
	moved, err := archive.Move(ctx, store, src, dst)
	t.Logf("moved to %q, err %v", moved, err)
	var bodies []string
	for _, k := range testsupport.ListKeys(t, c, bucket, "") {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(k)})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(out.Body)
		out.Body.Close()
		bodies = append(bodies, k+" = "+string(b))
	}
	joined := strings.Join(bodies, "\n")
	if !strings.Contains(joined, "= the other run's object") || !strings.Contains(joined, "= mine") {
		t.Errorf("an object was lost; the bucket holds:\n%s", joined)
	}
}

// swapOnRead runs swap when recover asks for confirmation (after its plan
// listed and checked the folders), then answers yes.
type swapOnRead struct {
	once sync.Once
	swap func()
	r    io.Reader
}

func (s *swapOnRead) Read(p []byte) (int, error) {
	s.once.Do(s.swap)
	return s.r.Read(p)
}

// A local archive remembers which folders it checked not to be links. A date
// folder replaced by a link to a folder outside the archive after the plan
// (by anyone who can write the archive's folder) is followed: recover reads
// the stranger's files and deletes one of them. os.Root (Go 1.24) or
// openat with O_NOFOLLOW would refuse it.
func TestDateFolderSwappedForALinkDuringRecoverIsNotFollowed(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-02/one", recoverableMessage(t))
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "one"), recoverableMessage(t), 0o644); err != nil {
		t.Fatal(err)
	}
	dateDir := filepath.Join(h.spec, "dead-letter-archive/sqs/2024-03-02")
	in := &swapOnRead{r: strings.NewReader("yes\n"), swap: func() {
		if err := os.Rename(dateDir, dateDir+".away"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(outside, dateDir); err != nil {
			t.Error(err)
		}
	}}
	ios, _, out, errOut := iostreams.Test()
	ios.In = in
	ios.SetTTY(true, false, true)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	ios.SetEnv(getenv)
	f := NewFactory(ios, getenv)
	code := Run(context.Background(), f, []string{"recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline"})
	t.Logf("exit %d\n%s%s", code, out, errOut)
	if _, err := os.Stat(filepath.Join(outside, "one")); err != nil {
		t.Errorf("recover deleted %s, a file outside the archive, through a date folder swapped for a link: %v", filepath.Join(outside, "one"), err)
	}
}

// Item 18 asked for singular and plural ("1 match", "1 object"); recover's
// plan, prompt and summary still say "1 objects" and "1 executions".
func TestRecoverCountsInWords(t *testing.T) {
	_, r := recoverOne(t)
	for _, bad := range []string{"1 of 1 objects", "1 executions"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("recover says %q:\n%s", bad, r.stderr)
		}
	}
}

// On a terminal, -o json escapes what a terminal would act on and JSON
// alone does not: a C1 control such as U+009B (CSI), and the Unicode
// bidirectional controls (U+202E RIGHT-TO-LEFT OVERRIDE and kin: a key can
// read as another). Both reached the terminal raw from show -o json and
// search -o json (item 14: on a TTY, escape C0 and C1 controls in every
// value that came from the archive); JSON carries them escaped (\u202e)
// and stays exact. Text output escapes them as well, so that JSON is no
// exception.
func TestJSONOnATerminalEscapesControls(t *testing.T) {
	for _, c := range []struct {
		name, control, collection, key string
	}{
		{"C1 CSI", "\u009b", "M\u009b2J", "sqs/2024-03-02/c1"},
		{"RIGHT-TO-LEFT OVERRIDE", "\u202e", "M\u202eQG90", "sqs/2024-03-02/bidi\u202enosj.exe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := localHostile(t)
			h.put(hostileRoot+c.key, bytes.ReplaceAll(recoverableMessage(t), []byte("MYD09GQ"), []byte(c.collection)))
			for _, args := range [][]string{
				{"show", "--archive", h.spec, "-o", "json", c.key},
				{"search", "--archive", h.spec, "-o", "json"},
				{"search", "--archive", h.spec, "-o", "ndjson"},
			} {
				r := run(t, true, nil, "", args...)
				if r.code != 0 {
					t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
				}
				if strings.Contains(r.stdout, c.control) {
					t.Errorf("%s -o %s on a terminal printed a raw %s", args[0], args[slices.Index(args, "-o")+1], c.name)
				}
			}
			if r := run(t, true, nil, "", "search", "--archive", h.spec); strings.Contains(r.stdout, c.control) {
				t.Errorf("search's table printed a raw %s too", c.name)
			}
		})
	}
}

// An unreadable object whose move to failed-sqs fails stays in place, but
// the summary counts it as processed ("1 unreadable, 0 left in place"): the
// docs promise that the counts name exactly the objects still in place.
// (Here failed-sqs is a plain file, so no folder can be made under it; on S3
// a folder marker "…/2024-03-05/" gives the same, see below.)
func TestFailedMoveIsCountedAsLeft(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-02/bad", []byte("not json"))
	h.put(hostileRoot+"failed-sqs", []byte("a file where the folder would be"))
	r := runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--yes", "-o", "ndjson")
	if _, ok := h.get(hostileRoot + "sqs/2024-03-02/bad"); !ok {
		t.Fatalf("the object was moved after all (exit %d): %s", r.code, r.stderr)
	}
	var sum map[string]any
	for _, o := range results(t, r.stdout) {
		if o["type"] == "summary" {
			sum = o
		}
	}
	if sum == nil || sum["left"] != float64(1) {
		t.Errorf("the object stayed in place, but the summary says left=%v:\n%s%s", sum["left"], r.stdout, r.stderr)
	}
}

// A zero-byte folder marker (what the S3 console's "Create folder" writes,
// key ending in "/") is read as an unreadable object: search exits 3 on an
// archive that holds no bad message, and recover tries to move the marker
// to failed-sqs/<today>/<folder name>.
func TestS3FolderMarkerIsNotAnUnreadableObject(t *testing.T) {
	e := newRecoverEnv(t, nil, nil)
	h := s3Hostile(t, e.s3)
	h.put(hostileRoot+"sqs/2024-03-02/", nil)
	h.put(hostileRoot+"sqs/2024-03-02/one", recoverableMessage(t))
	r := runAt(t, time.Now, noPrompt, "", "search", "--archive", h.spec, "--date", "2024-03-02")
	if r.code != 0 {
		t.Errorf("search exit %d on an archive whose only oddity is a folder marker: %s", r.code, r.stderr)
	}
}

// rewriteStrings replaces old with new in every string of an archived
// message, at every level of JSON held in strings.
func rewriteStrings(t *testing.T, msg []byte, old, new string) []byte {
	t.Helper()
	return transformJSON(t, msg, nil, func(s string) string { return strings.ReplaceAll(s, old, new) })
}

// transformJSON rewrites a JSON text's member names with key and its
// strings with str (either may be nil), inside nested JSON texts too.
func transformJSON(t *testing.T, msg []byte, key, str func(string) string) []byte {
	t.Helper()
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if key != nil && key(k) != k {
					delete(v, k)
					k = key(k)
				}
				v[k] = walk(x)
			}
		case []any:
			for i, x := range v {
				v[i] = walk(x)
			}
		case string:
			if s := strings.TrimSpace(v); strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[") {
				var inner any
				if json.Unmarshal([]byte(v), &inner) == nil {
					b, err := json.Marshal(walk(inner))
					if err != nil {
						t.Fatal(err)
					}
					return string(b)
				}
			}
			if str != nil {
				return str(v)
			}
		}
		return v
	}
	var v any
	if err := json.Unmarshal(msg, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recover's plan prints the collections and statuses it found ("by
// collection", "by status") on stderr without escaping them: on a terminal
// a collection name from the archive sets the window title and clears the
// screen (item 14).
func TestRecoverPlanEscapesArchiveText(t *testing.T) {
	h := localHostile(t)
	msg := rewriteStrings(t, recoverableMessage(t), "MYD09GQ", "M\x1b]0;pwned\x07\x1b[2J")
	h.put(hostileRoot+"sqs/2024-03-02/one", msg)
	r := run(t, true, nil, "", "recover", "--archive", h.spec, "--database-url", hostileDB(t), "--offline", "--dry-run")
	if !strings.Contains(r.stderr, "by collection") {
		t.Fatalf("no plan (exit %d): %s", r.code, r.stderr)
	}
	if bad := rawControls(r.stderr); len(bad) > 0 {
		t.Errorf("recover's plan on a terminal printed %v raw:\n%q", bad, r.stderr)
	}
}

// The advisory lock is taken only after the plan (which reads every
// selected object, minutes on a large S3 archive). A run that plans while
// another run works is not refused "at once": it reads the whole archive,
// and if the other run has finished by then, it goes on with a stale plan
// and reports the objects the other run recovered as "left in place"
// (ReadError "no such key"), exiting 3 although nothing is left.
// Here run A (one date) runs while run B waits at its confirmation prompt,
// right after its plan.
func TestLockIsTakenBeforeThePlan(t *testing.T) {
	h := localHostile(t)
	h.put(hostileRoot+"sqs/2024-03-01/early", recoverableMessage(t))
	h.put(hostileRoot+"sqs/2024-03-02/late", recoverableMessage(t))
	db := hostileDB(t)
	var a runResult
	in := &swapOnRead{r: strings.NewReader("yes\n"), swap: func() {
		a = runAt(t, time.Now, noPrompt, "", "recover", "--archive", h.spec, "--database-url", db, "--offline", "--yes", "--date", "2024-03-01")
	}}
	ios, _, out, errOut := iostreams.Test()
	ios.In = in
	ios.SetTTY(true, false, true)
	getenv := func(string) string { return "" }
	ios.SetEnv(getenv)
	code := Run(context.Background(), NewFactory(ios, getenv), []string{"recover", "--archive", h.spec, "--database-url", db, "--offline", "-o", "ndjson"})
	if a.code == 0 && code != 0 {
		t.Errorf("run A (exit 0) ran while run B planned; B then exited %d with a stale plan:\n%s%s", code, out, errOut)
	}
}

// A date folder that is a symbolic link is not named at all: search for
// that date reads "0 matches, 0 objects read" and exits 0, whereas the docs
// say a link is listed and named as unreadable by search, show and recover.
// (It shows up only with --include-legacy, as a legacy object.)
func TestSymlinkedDateFolderIsNamed(t *testing.T) {
	h := localHostile(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "one"), recoverableMessage(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(h.spec, "dead-letter-archive/sqs/2024-03-02")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--date", "2024-03-02"}, nil} {
		r := run(t, false, nil, "", append([]string{"search", "--archive", h.spec}, args...)...)
		if r.code == 0 && !strings.Contains(r.stderr, "symbolic link") {
			t.Errorf("search %v: exit 0 and no word of the linked date folder: %s", args, r.stderr)
		}
	}
}

// A local key that is not valid UTF-8 (any byte but NUL is a valid key, say
// the docs) is printed in -o json / -o ndjson with U+FFFD in place of the
// bytes: the "key" field names no object (or a different one, named with
// U+FFFD), so a script that feeds JSON keys back to show or recover -0
// cannot reach it.
func TestJSONKeyOfNonUTF8NameRoundTripsThroughKeyBase64(t *testing.T) {
	h := localHostile(t)
	key := hostileRoot + "sqs/2024-03-02/bad\xff\xfename"
	h.put(key, recoverableMessage(t))
	r := run(t, false, nil, "", "search", "--archive", h.spec, "-o", "ndjson")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// A JSON string cannot carry bytes that are not UTF-8: key_base64 does.
	var o struct {
		Key       string
		KeyBase64 *string `json:"key_base64"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(r.stdout, "\n", 2)[0]), &o); err != nil {
		t.Fatal(err)
	}
	if o.KeyBase64 == nil {
		t.Fatalf("search -o ndjson names the key %q and gives no key_base64; the object is %q", o.Key, key)
	}
	if b, err := base64.StdEncoding.DecodeString(*o.KeyBase64); err != nil || string(b) != key {
		t.Errorf("key_base64 %q decodes to %q (%v), the object is %q", *o.KeyBase64, b, err, key)
	}
}

// replaceEvent is an archived EventBridge event whose message is
// "held in S3" (Cumulus's replace: {Bucket, Key, TargetPath}).
func replaceEvent(t *testing.T, name, bucket, key string) []byte {
	t.Helper()
	msg, _ := json.Marshal(map[string]any{
		"cumulus_meta": map[string]any{"execution_name": name, "state_machine": "arn:aws:states:us-east-1:123456789012:stateMachine:sm"},
		"replace":      map[string]any{"Bucket": bucket, "Key": key, "TargetPath": "$"},
	})
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": name, "detail-type": "Step Functions Execution Status Change", "source": "aws.states",
		"account": "123456789012", "time": "2024-03-01T10:00:00Z", "region": "us-east-1",
		"detail": map[string]any{"executionArn": "arn:aws:states:us-east-1:123456789012:execution:sm:" + name,
			"stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:sm", "name": name, "status": "SUCCEEDED",
			"startDate": 1709287200000, "stopDate": 1709287300000, "input": string(msg), "output": string(msg)},
	})
	return b
}

// An archived message can name any bucket and key in its `replace`, and
// recover (without --offline) reads it with the operator's credentials, and
// splices it into the message it writes: the docs promise that "only keys
// under <stack>/dead-letter-archive/ of the archive given are read". (Cumulus
// v21 does read replace payloads, but from its own system bucket; dla could
// hold them to cumulus_meta.system_bucket / the stack's prefix.)
func TestReplaceIsNotReadFromAnotherBucket(t *testing.T) {
	e := newRecoverEnv(t, nil, nil)
	h := s3Hostile(t, e.s3)
	other := testsupport.NewBucket(t, e.s3)
	if _, err := e.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(other), Key: aws.String("prod/secret.txt"),
		Body: strings.NewReader("DB_PASSWORD=hunter2")}); err != nil {
		t.Fatal(err)
	}
	h.put(hostileRoot+"sqs/2024-03-01/steal", replaceEvent(t, "steal", other, "prod/secret.txt"))
	r := runAt(t, time.Now, e.env, "", "recover", "--archive", h.spec, "--database-url", e.dbURL, "--dry-run", "-o", "ndjson")
	if strings.Contains(r.stdout, "s3://"+other+"/prod/secret.txt is not valid JSON") {
		t.Errorf("recover read s3://%s/prod/secret.txt, outside the archive, because an archived message named it:\n%s", other, r.stdout)
	}
}

// One archived message whose `replace` names a bucket that cannot be read
// (an invalid name here; AccessDenied takes the same path) is classed as a
// transient error, which stops the whole run: the objects after it are
// never processed, and every re-run stops at the same object again.
func TestUnreadableReplaceBucketDoesNotStopRecovery(t *testing.T) {
	e, h := hostileS3(t)
	h.put(hostileRoot+"sqs/2024-03-01/a-blocker", replaceEvent(t, "blocker", "Bad..Bucket!", "x"))
	h.put(hostileRoot+"sqs/2024-03-02/b-normal", recoverableMessage(t))
	for run := 1; run <= 2; run++ {
		r := runAt(t, time.Now, e.env, "", "recover", "--archive", h.spec, "--database-url", e.dbURL, "--yes", "--concurrency", "1", "-o", "ndjson")
		if _, ok := h.get(hostileRoot + "sqs/2024-03-02/b-normal"); ok {
			t.Errorf("run %d (exit %d): the good object was never processed, the run stopped at the blocker:\n%s", run, r.code, r.stderr)
		}
	}
}

// The "one run at a time" lock lives on one pooled connection. When that
// session ends (a PostgreSQL restart or failover, a proxy or firewall
// dropping an idle connection, idle_session_timeout) the run goes on
// without its lock, and a second recover on the same archive is no longer
// refused. Here the lock's backend is ended with pg_terminate_backend (in
// this test's own database only) while run A works.
func TestLockLostWithItsSessionStillRefusesASecondRun(t *testing.T) {
	h, db := lockArchive(t, 1500)
	run := startLockedRun(t, h.spec, db, "")
	if _, err := run.conn.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, run.pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the lock is checked ten times a second: leave room for a loaded machine
	b := recoverAlongside(t, h.spec, db)
	a := run.interrupt()
	if b.code != 1 || !strings.Contains(b.stderr, "lock") {
		t.Errorf("run B ran alongside run A (A exit %d, B exit %d) once A's lock session ended:\n%s", a.code, b.code, b.stderr)
	}
}

// S3 lists keys in XML 1.0, which cannot carry most C0 controls: AWS asks
// clients to send encoding-type=url for keys that hold them ("XML 1.0
// parsers cannot parse some characters"). dla lists without it, so one key
// holding ESC (the very key of item 14's terminal-escape attack) makes the
// whole listing fail to parse: search, stats and recover of that date stop
// at "illegal character code U+001B". This fake S3 answers as AWS documents:
// the raw key as a character reference, or URL-encoded when asked.
func TestS3ListReadsAControlCharacterKey(t *testing.T) {
	key := hostileRoot + "sqs/2024-03-01/esc\x1b[2J"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		k, enc := strings.ReplaceAll(key, "\x1b", "&#x1B;"), ""
		if q.Get("encoding-type") == "url" {
			k, enc = url.QueryEscape(key), "<EncodingType>url</EncodingType>"
		}
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>%s</Prefix>%s<KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><Contents><Key>%s</Key><Size>3</Size></Contents></ListBucketResult>`,
			q.Get("prefix"), enc, k)
	}))
	defer srv.Close()
	c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
	var got []string
	err := archive.NewS3(c, "b").List(context.Background(), hostileRoot+"sqs/", false, func(e archive.Entry) error {
		got = append(got, e.Key)
		return nil
	})
	if err != nil || len(got) != 1 || got[0] != key {
		t.Errorf("listing a date that holds a key with ESC: %q, %v", got, err)
	}
}
