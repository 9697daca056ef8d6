package dlacmd

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deadletter/deadletter/internal/testsupport"
	"github.com/deadletter/deadletter/internal/testsupport/fakeathena"
)

// An archived object whose key holds bytes that are valid in an
// S3 key but not in a parsed URL ('%' not followed by two hex digits, an
// ASCII control character) is found by local search; Athena's "$path" for
// it is the raw key ("s3://bucket/" + key, unescaped), and keyFromPath
// parses it with net/url, which refuses it: the whole Athena search stops
// with "not an s3:// URL" and prints nothing for the other objects either.
// DEFECT (athena.go keyFromPath: url.Parse on a raw key). The "%2F" and
// "?#" subtests pass: they show those keys are read back as stored.
func TestAthenaReadsHostileKeysInPathAsStored(t *testing.T) {
	e := newAthenaEnv(t)
	c := testsupport.S3Client(t)
	archiveURL := "s3://" + e.bucket + "/demo"
	for _, name := range []string{"100%zz done.json", "pct%2Fslash.json", "q?x#y.json"} {
		t.Run(strings.NewReplacer("%", "pct", "?", "q", "#", "h").Replace(name), func(t *testing.T) {
			key := "demo/dead-letter-archive/sqs/2024-03-05/" + name
			e.putSampleCopy(t, c, key)
			t.Cleanup(func() {
				_, _ = c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key)})
			})
			args := []string{"search", "--archive", archiveURL, "--date", "2024-03-05", "-o", "keys", "--ignore-unreadable"}
			local := run(t, false, nil, "", args...)
			if local.code != 0 || !strings.Contains(local.stdout, name) {
				t.Fatalf("local search: exit %d, stdout does not hold %q:\n%s\n%s", local.code, name, local.stdout, local.stderr)
			}
			keys := strings.Split(strings.TrimSuffix(local.stdout, "\n"), "\n")
			e.plan = func(string) fakeathena.Execution {
				ex := e.rows(nil)
				for _, k := range keys {
					ex.Rows = append(ex.Rows, []*string{aws.String("s3://" + e.bucket + "/" + k), aws.String("2024-03-05")})
				}
				return ex
			}
			got := run(t, false, nil, "", append(args, "--engine", "athena")...)
			if got.code != 0 || got.stdout != local.stdout {
				t.Fatalf("athena search of an archive holding %q: exit %d\nstderr: %s\nathena printed:\n%q\nlocal printed:\n%q", name, got.code, got.stderr, got.stdout, local.stdout)
			}
		})
	}
}

// Athena's rows are trusted to be objects of sqs/<date>/: a
// "$path" in the same archive but under failed-sqs/ (a table whose
// location is the wrong area; the command itself says "the Glue table does
// not cover failed-sqs/") is fetched, matched and printed as an sqs/ result,
// so `-o keys | dla recover -` would act on failed-sqs/ objects the user
// did not select. A path in the same bucket under another stack is refused
// by the contained store (it is not printed; that part holds).
// DEFECT (athena.go keyFromPath checks the bucket only, not that the key
// is under the archive's sqs/ area).
func TestAthenaPathOutsideSQSAreaIsRefused(t *testing.T) {
	e := newAthenaEnv(t)
	c := testsupport.S3Client(t)
	archiveURL := "s3://" + e.bucket + "/demo"
	failedKey := "demo/dead-letter-archive/failed-sqs/2024-03-05/copy-of-dcb6deb2"
	otherStack := "other/dead-letter-archive/sqs/2024-03-05/copy-of-dcb6deb2"
	for _, k := range []string{failedKey, otherStack} {
		e.putSampleCopy(t, c, k)
	}
	for _, k := range []string{failedKey, otherStack} {
		t.Run(strings.Split(k, "/")[0]+"-"+strings.Split(k, "/")[2], func(t *testing.T) {
			e.plan = func(string) fakeathena.Execution {
				ex := e.rows(nil)
				ex.Rows = [][]*string{{aws.String("s3://" + e.bucket + "/" + k), aws.String("2024-03-05")}}
				return ex
			}
			got := run(t, false, nil, "", "search", "--archive", archiveURL, "--date", "2024-03-05", "-o", "keys", "--engine", "athena")
			if strings.Contains(got.stdout, k) {
				t.Fatalf("athena search printed %s, which is not under %s's sqs/ area (exit %d, stderr %s)", k, archiveURL, got.code, got.stderr)
			}
			if got.code == 0 {
				t.Fatalf("a row outside sqs/ passed silently: exit 0, stderr %s", got.stderr)
			}
		})
	}
}

// putSampleCopy puts a copy of a sample message of 2024-03-05 at key in
// the bucket.
func (e *athenaEnv) putSampleCopy(t *testing.T, c *s3.Client, key string) {
	t.Helper()
	body, err := os.ReadFile(sampleArchive + "/dead-letter-archive/sqs/2024-03-05/dcb6deb2-8893-413d-aaa9-652d72007bb8-da031405-3b3c-4201-b4de-7ff3be57a02d")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(e.bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}
