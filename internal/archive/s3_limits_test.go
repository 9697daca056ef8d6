package archive_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// An object over the size bound is refused by name, before its body is
// read; a smaller one still reads.
func TestS3GetRefusesAnObjectOverTheLimit(t *testing.T) {
	ctx := context.Background()
	archive.SetMaxObjectSize(t, 100)
	client := testsupport.S3Client(t)
	s := archive.NewS3(client, testsupport.NewBucket(t, client))
	fits, over := edgeRoot+"fits", edgeRoot+"over the limit"
	for k, n := range map[string]int{fits: 100, over: 101} {
		if err := s.Put(ctx, k, bytes.Repeat([]byte("x"), n)); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := s.GetInto(ctx, fits, make([]byte, 0, 10)); err != nil || len(b) != 100 {
		t.Errorf("100 bytes under a 100-byte limit: %d bytes, %v", len(b), err)
	}
	for _, get := range []func() ([]byte, error){
		func() ([]byte, error) { return s.Get(ctx, over) },
		func() ([]byte, error) { return s.GetInto(ctx, over, make([]byte, 0, 4096)) },
	} {
		b, err := get()
		if !errors.Is(err, archive.ErrTooLarge) || b != nil || !strings.Contains(err.Error(), over) {
			t.Errorf("101 bytes under a 100-byte limit: %d bytes, %v; want ErrTooLarge naming the key", len(b), err)
		}
	}
}

// lengthClient answers GetObject with a body and the Content-Length given
// (none when nil).
type lengthClient struct {
	archive.S3API
	body   *countingBody
	length *int64
}

type countingBody struct {
	r io.Reader
	n int
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
func (c *countingBody) Close() error { return nil }

func (c lengthClient) GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return &s3.GetObjectOutput{Body: c.body, ContentLength: c.length}, nil
}

// An announced length over the bound is refused before any byte is read;
// without a length (or with a wrong one) the read stops past the bound.
func TestS3GetStopsReadingPastTheLimit(t *testing.T) {
	archive.SetMaxObjectSize(t, 100)
	for _, tc := range []struct {
		length  *int64
		maxRead int
	}{{aws.Int64(1 << 20), 0}, {nil, 4096}, {aws.Int64(50), 4096}} {
		body := &countingBody{r: bytes.NewReader(make([]byte, 1<<20))}
		b, err := archive.NewS3(lengthClient{body: body, length: tc.length}, "b").Get(context.Background(), "k/huge")
		if !errors.Is(err, archive.ErrTooLarge) || b != nil || !strings.Contains(err.Error(), "k/huge") {
			t.Errorf("1 MiB (Content-Length %v) under a 100-byte limit: %d bytes, %v", aws.ToInt64(tc.length), len(b), err)
		}
		if body.n > tc.maxRead {
			t.Errorf("Content-Length %v: read %d bytes of the body past a 100-byte limit, want at most %d", aws.ToInt64(tc.length), body.n, tc.maxRead)
		}
	}
}

// A search reports the object over the bound as unreadable, with its key
// and why, and goes on with the others.
func TestSelectionReportsAnObjectOverTheLimit(t *testing.T) {
	ctx := context.Background()
	const seed = "../../testdata/cumulus-v21-seed3/archive/demo/dead-letter-archive/sqs/2024-01-01/"
	msg, err := os.ReadFile(seed + "5fe3db9d-6e94-4f5f-bdeb-12863f068b35-0e3da120-602d-4952-83a6-57399d08a9b2")
	if err != nil {
		t.Fatal(err)
	}
	archive.SetMaxObjectSize(t, len(msg))
	client := testsupport.S3Client(t)
	s := archive.NewS3(client, testsupport.NewBucket(t, client))
	root := "demo/dead-letter-archive/sqs/2024-01-01/"
	objs := map[string][]byte{root + "a": msg, root + "b big": append(slices.Clone(msg), ' '), root + "c": msg}
	for k, b := range objs {
		if err := s.Put(ctx, k, b); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	st, err := selection.Run(ctx, s, selection.Scope{Layout: dla.Layout{Stack: "demo"}, Area: dla.AreaSQS}, 4, func(r selection.Result) error {
		if r.Unreadable() {
			if !errors.Is(r.Err, archive.ErrTooLarge) || !strings.Contains(r.Err.Error(), r.Entry.Key) {
				t.Errorf("%s unreadable for %v; want ErrTooLarge naming the key", r.Entry.Key, r.Err)
			}
			got = append(got, r.Entry.Key+" !")
		} else {
			got = append(got, r.Entry.Key)
		}
		return nil
	})
	if want := []string{root + "a", root + "b big !", root + "c"}; err != nil || !slices.Equal(got, want) || st.Unreadable != 1 || st.Matched != 2 {
		t.Errorf("search: %q, %+v, %v; want %q", got, st, err, want)
	}
}
