package archive

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// S3API is the part of the S3 client the store uses.
type S3API interface {
	ListObjectsV2(context.Context, *s3.ListObjectsV2Input, ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CopyObject(context.Context, *s3.CopyObjectInput, ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(context.Context, *s3.DeleteObjectsInput, ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

// S3 is a Store over one bucket.
type S3 struct {
	client S3API
	bucket string
	// PageSize is ListObjectsV2's MaxKeys (1000, the S3 maximum, by default).
	PageSize int32
	// ListConcurrency is how many listings of separate prefixes (date
	// folders) a scan may run at once (DefaultListConcurrency by default;
	// 1 lists them one after another).
	ListConcurrency int

	// ifMatch is what the server was seen to do with If-Match on
	// DeleteObject (DeleteFast): ifMatchUnknown until a probe tells.
	ifMatchMu sync.Mutex
	ifMatch   ifMatchSupport
}

type ifMatchSupport int

const (
	ifMatchUnknown ifMatchSupport = iota
	ifMatchProbing
	ifMatchHonoured
	ifMatchIgnored
)

// DefaultListConcurrency bounds the date folders a scan of S3 lists at
// once: a LIST is a round trip of 20–60 ms on S3, so a year of folders
// listed one after another would cost 7–20 s before the first object.
const DefaultListConcurrency = 16

// NewS3 returns a Store over bucket.
func NewS3(client S3API, bucket string) *S3 {
	return &S3{client: client, bucket: bucket, PageSize: 1000, ListConcurrency: DefaultListConcurrency}
}

// Listings implements ConcurrentLister.
func (s *S3) Listings() int { return max(s.ListConcurrency, 1) }

func (s *S3) String() string { return "s3://" + s.bucket }

// List streams ListObjectsV2 pages; in a delimited listing the page's
// objects and common prefixes are merged back into key order.
//
// It asks for URL-encoded keys (encoding-type=url): S3 answers in XML 1.0,
// which cannot carry most control characters, so one key holding ESC would
// otherwise make the whole page unparseable. Keys are decoded only when the
// answer says it is encoded: a server that ignores the request (versitygw)
// sends raw keys, which decoding would corrupt ("a+b" would become "a b").
func (s *S3) List(ctx context.Context, prefix string, delimited bool, fn func(Entry) error) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(prefix),
		MaxKeys: aws.Int32(s.PageSize), EncodingType: types.EncodingTypeUrl}
	if delimited {
		in.Delimiter = aws.String("/")
	}
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", s.bucket, prefix, err)
		}
		objs, prefs, err := decodePage(page)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", s.bucket, prefix, err)
		}
		for len(objs) > 0 || len(prefs) > 0 {
			var e Entry
			if len(prefs) == 0 || (len(objs) > 0 && objs[0].Key < prefs[0]) {
				e, objs = objs[0], objs[1:]
			} else {
				e = Entry{Key: prefs[0], IsPrefix: true}
				prefs = prefs[1:]
			}
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodePage returns a listing page's objects and common prefixes with
// their keys decoded when the page is URL-encoded. S3 encodes them
// form-style (a space as "+", a "+" as "%2B"), which url.QueryUnescape
// undoes.
func decodePage(page *s3.ListObjectsV2Output) ([]Entry, []string, error) {
	decode := func(k string) (string, error) { return k, nil }
	if page.EncodingType == types.EncodingTypeUrl {
		decode = func(k string) (string, error) {
			d, err := url.QueryUnescape(k)
			if err != nil {
				return "", fmt.Errorf("undecodable key %q in a URL-encoded listing: %w", k, err)
			}
			return d, nil
		}
	}
	objs := make([]Entry, len(page.Contents))
	for i, o := range page.Contents {
		k, err := decode(aws.ToString(o.Key))
		if err != nil {
			return nil, nil, err
		}
		objs[i] = Entry{Key: k, Size: aws.ToInt64(o.Size), LastModified: aws.ToTime(o.LastModified).UTC()}
	}
	prefs := make([]string, len(page.CommonPrefixes))
	for i, cp := range page.CommonPrefixes {
		k, err := decode(aws.ToString(cp.Prefix))
		if err != nil {
			return nil, nil, err
		}
		prefs[i] = k
	}
	return objs, prefs, nil
}

func (s *S3) Stat(ctx context.Context, key string) (Entry, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		var nf *types.NotFound
		if errors.As(err, &nf) || isCode(err, "NotFound") || isCode(err, "NoSuchKey") {
			return Entry{}, fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		return Entry{}, fmt.Errorf("head s3://%s/%s: %w", s.bucket, key, err)
	}
	return Entry{Key: key, Size: aws.ToInt64(out.ContentLength), LastModified: aws.ToTime(out.LastModified).UTC(),
		Origin: out.Metadata[originMeta]}, nil
}

func (s *S3) Get(ctx context.Context, key string) ([]byte, error) { return s.GetInto(ctx, key, nil) }

func (s *S3) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) || isCode(err, "NotFound") {
			return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("get s3://%s/%s: %w", s.bucket, key, err)
	}
	defer out.Body.Close()
	size := int64(0)
	if out.ContentLength != nil && *out.ContentLength > 0 {
		size = *out.ContentLength
	}
	if size > int64(maxObjectSize) { // refused unread (closing the body drops the rest)
		return nil, fmt.Errorf("get s3://%s/%s (%d bytes): %w", s.bucket, key, size, ErrTooLarge)
	}
	b, err := readAll(out.Body, buf[:0], size)
	if errors.Is(err, ErrTooLarge) {
		return nil, fmt.Errorf("get s3://%s/%s (more than %d bytes): %w", s.bucket, key, maxObjectSize, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read s3://%s/%s: %w", s.bucket, key, err)
	}
	return b, nil
}

func (s *S3) Put(ctx context.Context, key string, body []byte) error {
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
	})
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// originMeta is the metadata key under which PutNew records an origin.
const originMeta = "dla-origin"

// PutNew sends PutObject with If-None-Match: *, so that S3 refuses (412)
// to replace an object; it looks first too, for servers that ignore the
// condition. The origin is kept as object metadata (x-amz-meta-dla-origin).
func (s *S3) PutNew(ctx context.Context, key string, body []byte, origin string) error {
	if _, err := s.Stat(ctx, key); err == nil {
		return fmt.Errorf("put s3://%s/%s: %w", s.bucket, key, ErrExists)
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	in := &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		IfNoneMatch: aws.String("*"),
	}
	if origin != "" {
		in.Metadata = map[string]string{originMeta: origin}
	}
	_, err := s.client.PutObject(ctx, in)
	if isCode(err, "PreconditionFailed") || isCode(err, "ConditionalRequestConflict") {
		return fmt.Errorf("put s3://%s/%s: %w", s.bucket, key, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

func (s *S3) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("delete s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// neverETag is an ETag no object has: the probe's If-Match, which a server
// that honours the condition refuses.
const neverETag = `"00000000000000000000000000000000"`

// DeleteFast deletes key only while the MD5 of its bytes is sum, in
// one request: DeleteObject with If-Match on the ETag a single-part upload
// has (the MD5), where the server honours If-Match on DeleteObject (S3
// does since 2025-09; some S3-compatible servers ignore it, and would
// delete whatever the object holds). An object already gone is
// ErrNotFound where the server says so (S3 answers 404 NoSuchKey with
// If-Match), and no error where it does not (some servers answer 204).
//
// Whether the server honours it is learnt once per store, on the first
// call: after DeleteChecked's HEAD found the object unchanged, a
// DeleteObject whose If-Match no object matches must be refused (412).
// Until then, and on a server that ignores it, each call is DeleteChecked
// (HEAD, then DeleteObject): never less safe than that. A refusal of the
// one-request delete (the ETag is not the MD5: multipart uploads, SSE-KMS;
// or the bytes changed) is decided by DeleteChecked too.
func (s *S3) DeleteFast(ctx context.Context, key string, sum [md5.Size]byte) error {
	s.ifMatchMu.Lock()
	state := s.ifMatch
	if state == ifMatchUnknown {
		s.ifMatch = ifMatchProbing
	}
	s.ifMatchMu.Unlock()
	var probe func(context.Context, string) bool
	switch state {
	case ifMatchHonoured:
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
			IfMatch: aws.String(`"` + hex.EncodeToString(sum[:]) + `"`)})
		switch {
		case err == nil:
			return nil
		case isCode(err, "NoSuchKey") || isCode(err, "NotFound"):
			return fmt.Errorf("s3://%s/%s: %w", s.bucket, key, ErrNotFound)
		case !isCode(err, "PreconditionFailed"):
			return fmt.Errorf("delete s3://%s/%s: %w", s.bucket, key, err)
		}
		// Another ETag: other bytes, or not an MD5. DeleteChecked tells.
	case ifMatchUnknown:
		probe = s.learnIfMatch
	}
	return s.deleteChecked(ctx, key, sum, probe)
}

// learnIfMatch is the probe: key holds the bytes to delete (a HEAD just
// said so) under etag. A DeleteObject whose If-Match no object matches is
// refused by a server that honours the condition; one that ignores it
// deletes key, which was to be deleted anyway.
func (s *S3) learnIfMatch(ctx context.Context, key string) (deleted bool) {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), IfMatch: aws.String(neverETag)})
	s.ifMatchMu.Lock()
	defer s.ifMatchMu.Unlock()
	switch {
	case isCode(err, "PreconditionFailed"):
		s.ifMatch = ifMatchHonoured
	case err == nil:
		s.ifMatch = ifMatchIgnored
		return true
	default:
		s.ifMatch = ifMatchUnknown // ask again on the next call
	}
	return false
}

// DeleteChecked deletes key only while the MD5 of its bytes is sum, with
// If-Match on the ETag a HEAD returned. An ETag that is not the MD5
// (multipart uploads, SSE-KMS) is checked by reading the object under that
// same ETag.
func (s *S3) DeleteChecked(ctx context.Context, key string, sum [md5.Size]byte) error {
	return s.deleteChecked(ctx, key, sum, nil)
}

// deleteChecked is DeleteChecked; probe, when set, is called once the
// object is known to hold the bytes, before the conditional delete, and
// reports whether it deleted the object itself.
func (s *S3) deleteChecked(ctx context.Context, key string, sum [md5.Size]byte, probe func(context.Context, string) bool) error {
	head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		var nf *types.NotFound
		if errors.As(err, &nf) || isCode(err, "NotFound") || isCode(err, "NoSuchKey") {
			return fmt.Errorf("s3://%s/%s: %w", s.bucket, key, ErrNotFound)
		}
		return fmt.Errorf("head s3://%s/%s: %w", s.bucket, key, err)
	}
	if aws.ToString(head.ETag) != `"`+hex.EncodeToString(sum[:])+`"` {
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), IfMatch: head.ETag})
		if isCode(err, "PreconditionFailed") {
			return fmt.Errorf("s3://%s/%s: %w", s.bucket, key, ErrChanged)
		} else if err != nil {
			return fmt.Errorf("get s3://%s/%s: %w", s.bucket, key, err)
		}
		now, err := readAll(out.Body, nil, aws.ToInt64(out.ContentLength))
		out.Body.Close()
		if err != nil {
			return fmt.Errorf("read s3://%s/%s: %w", s.bucket, key, err)
		}
		if md5.Sum(now) != sum {
			return fmt.Errorf("s3://%s/%s: %w", s.bucket, key, ErrChanged)
		}
	}
	if probe != nil && probe(ctx, key) {
		return nil
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), IfMatch: head.ETag})
	switch {
	case isCode(err, "PreconditionFailed"):
		return fmt.Errorf("s3://%s/%s: %w", s.bucket, key, ErrChanged)
	case isCode(err, "NoSuchKey") || isCode(err, "NotFound"):
		// Deleted meanwhile (another run): the delete's goal is reached,
		// and the caller is told so.
		return fmt.Errorf("s3://%s/%s: %w", s.bucket, key, ErrNotFound)
	case err != nil:
		return fmt.Errorf("delete s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// DeleteMany sends DeleteObjects in batches of 1000 and reports the per-key
// errors S3 returns (Cumulus ignores them).
func (s *S3) DeleteMany(ctx context.Context, keys []string) (map[string]error, error) {
	failed := map[string]error{}
	for start := 0; start < len(keys); start += 1000 {
		batch := keys[start:min(start+1000, len(keys))]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i, k := range batch {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(s.bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
		})
		if err != nil {
			for _, k := range keys[start+len(batch):] {
				failed[k] = errors.New("not attempted")
			}
			for _, k := range batch {
				failed[k] = err
			}
			return failed, fmt.Errorf("delete objects in s3://%s: %w", s.bucket, err)
		}
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue // already gone: what the delete was for
			}
			failed[aws.ToString(e.Key)] = fmt.Errorf("%s: %s", aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	return failed, nil
}

func isCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}
