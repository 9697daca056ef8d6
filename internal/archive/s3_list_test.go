package archive_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/testsupport"
)

const edgeRoot = "st/dead-letter-archive/sqs/2024-01-01/"

// edgeKeys hold a character XML 1.0 cannot carry (ESC), a newline, what
// a URL decoding of a raw key would alter ('+', '%', a space), and
// non-ASCII text (which the encoding changes).
var edgeKeys = []string{
	edgeRoot + "esc\x1b[2J",
	edgeRoot + "nl\nx",
	edgeRoot + "plus+x",
	edgeRoot + "pct%41x",
	edgeRoot + "pct%2Bx",
	edgeRoot + "pct%",
	edgeRoot + "sp ace",
	edgeRoot + "a b",
	edgeRoot + "ünï-日本",
	edgeRoot + "a+/in", // a folder sorting after "a b" raw, before it once encoded
	edgeRoot + "d ir%/in",
}

// wantListing is what List should report for keys: flat, or delimited at
// edgeRoot (folders once, in key order).
func wantListing(keys []string, delimited bool) []string {
	seen := map[string]bool{}
	var want []string
	for _, k := range keys {
		rest := k[len(edgeRoot):]
		if i := strings.Index(rest, "/"); delimited && i >= 0 {
			k = edgeRoot + rest[:i+1] + " (folder)"
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		want = append(want, k)
	}
	slices.Sort(want) // S3's order: UTF-8 bytes
	return want
}

func listAll(t *testing.T, s archive.Store, prefix string, delimited bool) []string {
	t.Helper()
	var got []string
	err := s.List(context.Background(), prefix, delimited, func(e archive.Entry) error {
		if e.IsPrefix {
			got = append(got, e.Key+" (folder)")
		} else {
			got = append(got, e.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list %q (delimited %v): %v", prefix, delimited, err)
	}
	return got
}

// Through the real S3 server: every key lists as itself, over several
// pages. versitygw ignores encoding-type=url (its answer has no
// EncodingType), so this is the raw path: a key must not be decoded there.
// The one key it cannot return is ESC's (it sends U+FFFD in its place, as
// XML cannot carry ESC): that is accepted only while it answers raw.
func TestS3ListKeysWithControlAndReservedCharacters(t *testing.T) {
	ctx := context.Background()
	client := testsupport.S3Client(t)
	bucket := testsupport.NewBucket(t, client)
	s := archive.NewS3(client, bucket)
	s.PageSize = 2
	for _, k := range edgeKeys {
		// Deleted by name: the bucket's cleanup deletes what it lists, and
		// versitygw lists the ESC key under another name.
		t.Cleanup(func() { s.Delete(ctx, k) })
		if err := s.Put(ctx, k, []byte("{}")); err != nil {
			t.Fatalf("put %q: %v", k, err)
		}
	}
	probe, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(edgeRoot + "nl"), EncodingType: types.EncodingTypeUrl})
	if err != nil {
		t.Fatal(err)
	}
	encodes := probe.EncodingType == types.EncodingTypeUrl
	t.Logf("server answers encoding-type=url with EncodingType %q", probe.EncodingType)

	for _, delimited := range []bool{false, true} {
		got := listAll(t, s, edgeRoot, delimited)
		want := wantListing(edgeKeys, delimited)
		if !encodes {
			for i, k := range want {
				want[i] = strings.ReplaceAll(k, "\x1b", "\uFFFD")
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("delimited %v:\n got %q\nwant %q", delimited, got, want)
		}
		for _, k := range got {
			if k := strings.TrimSuffix(k, " (folder)"); !strings.HasSuffix(k, "/") && !strings.Contains(k, "\uFFFD") {
				if _, err := s.Get(ctx, k); err != nil {
					t.Errorf("get listed key %q: %v", k, err)
				}
			}
		}
	}
}

// fakeS3List answers ListObjectsV2 over keys as AWS does: key order,
// MaxKeys entries a page (a folder counts as one), and, when asked with
// encoding-type=url, Prefix, Delimiter, Key and CommonPrefixes/Prefix
// form-encoded with "/" kept (as measured on AWS: "a b" is "a+b", "a+b" is
// "a%2Bb", "100%" is "100%25"). Raw, it cannot carry ESC, as XML cannot.
func fakeS3List(t *testing.T, keys []string) *s3.Client {
	keys = slices.Sorted(slices.Values(keys))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("list-type") != "2" {
			http.Error(w, "only ListObjectsV2", http.StatusNotImplemented)
			return
		}
		prefix, delim := q.Get("prefix"), q.Get("delimiter")
		max, _ := strconv.Atoi(q.Get("max-keys"))
		start, _ := strconv.Atoi(q.Get("continuation-token"))
		enc := func(s string) string { return s }
		if q.Get("encoding-type") == "url" {
			enc = func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "%2F", "/") }
		}
		esc := func(s string) string {
			var b bytes.Buffer
			xml.EscapeText(&b, []byte(s))
			return b.String()
		}
		type item struct {
			key    string
			folder bool
		}
		var all []item
		for _, k := range keys {
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			if i := strings.Index(k[len(prefix):], delim); delim != "" && i >= 0 {
				f := k[:len(prefix)+i+len(delim)]
				if len(all) == 0 || all[len(all)-1].key != f {
					all = append(all, item{f, true})
				}
				continue
			}
			all = append(all, item{k, false})
		}
		end := min(start+max, len(all))
		var body strings.Builder
		fmt.Fprintf(&body, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>%s</Prefix>`, esc(enc(prefix)))
		if delim != "" {
			fmt.Fprintf(&body, `<Delimiter>%s</Delimiter>`, esc(enc(delim)))
		}
		if q.Get("encoding-type") == "url" {
			body.WriteString(`<EncodingType>url</EncodingType>`)
		}
		fmt.Fprintf(&body, `<KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys><IsTruncated>%v</IsTruncated>`, end-start, max, end < len(all))
		if end < len(all) {
			fmt.Fprintf(&body, `<NextContinuationToken>%d</NextContinuationToken>`, end)
		}
		for _, it := range all[start:end] { // S3 lists objects first, then folders
			if !it.folder {
				fmt.Fprintf(&body, `<Contents><Key>%s</Key><Size>2</Size></Contents>`, esc(enc(it.key)))
			}
		}
		for _, it := range all[start:end] {
			if it.folder {
				fmt.Fprintf(&body, `<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>`, esc(enc(it.key)))
			}
		}
		body.WriteString(`</ListBucketResult>`)
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, body.String())
	}))
	t.Cleanup(srv.Close)
	return s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: aws.AnonymousCredentials{}})
}

// Against S3's documented encoding: every key decodes to itself, the ESC
// key included, and folders merge with objects in the decoded order ("a b"
// before "a+/", though encoded "a+b" sorts after "a%2B/").
func TestS3ListDecodesURLEncodedPages(t *testing.T) {
	for _, pageSize := range []int32{1000, 3} {
		s := archive.NewS3(fakeS3List(t, edgeKeys), "b")
		s.PageSize = pageSize
		for _, delimited := range []bool{false, true} {
			got := listAll(t, s, edgeRoot, delimited)
			if want := wantListing(edgeKeys, delimited); !slices.Equal(got, want) {
				t.Errorf("page size %d, delimited %v:\n got %q\nwant %q", pageSize, delimited, got, want)
			}
		}
		// A prefix that itself needs encoding.
		if got := listAll(t, s, edgeRoot+"d ir%/", false); !slices.Equal(got, []string{edgeRoot + "d ir%/in"}) {
			t.Errorf("listing under %q: %q", edgeRoot+"d ir%/", got)
		}
	}
}
