package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/testsupport"
)

var dlaBin string

func TestMain(m *testing.M) { testsupport.RunWithBinary(m, "dla", "DLA_E2E_BIN", &dlaBin) }

const sample = "../../testdata/archive/demo"

func dla(t *testing.T, env []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(dlaBin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

func TestBinaryPipedOutputIsPlain(t *testing.T) {
	out, _, code := dla(t, []string{"NO_COLOR="}, "", "search", "--archive", sample, "--date", "2024-03-02")
	if code != 0 || strings.Contains(out, "\x1b[") || !strings.Contains(out, "\t") {
		t.Fatalf("piped table: exit %d, ANSI %v", code, strings.Contains(out, "\x1b["))
	}
	show, _, _ := dla(t, []string{"CLICOLOR_FORCE=1"}, "", "show", "--archive", sample, strings.Split(strings.Split(out, "\n")[0], "\t")[0])
	if !strings.Contains(show, "\x1b[") {
		t.Error("CLICOLOR_FORCE=1 should keep colour when piped")
	}
	show, _, _ = dla(t, []string{"CLICOLOR_FORCE=1", "NO_COLOR=1"}, "", "show", "--archive", sample, strings.Split(strings.Split(out, "\n")[0], "\t")[0])
	if strings.Contains(show, "\x1b[") {
		t.Error("NO_COLOR must win over CLICOLOR_FORCE")
	}
}

func TestBinaryExitCodes(t *testing.T) {
	if _, _, code := dla(t, nil, "", "search", "--archive", sample, "--date", "2024-03-02", "--granule", "NOPE"); code != 0 {
		t.Errorf("no match: exit %d, want 0", code)
	}
	if _, stderr, code := dla(t, nil, "", "search", "--archive", sample); code != 3 || !strings.Contains(stderr, "unreadable") {
		t.Errorf("unreadable objects: exit %d, want 3", code)
	}
	if _, _, code := dla(t, nil, "", "search", "--bogus"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
	if out, _, code := dla(t, nil, "", "help", "exit-codes"); code != 0 || !strings.Contains(out, "partial") {
		t.Errorf("help exit-codes: exit %d", code)
	}
}

// TestBinaryAgainstS3 uploads the sample archive to versitygw and checks
// that searching it over S3 gives what searching the directory gives.
func TestBinaryAgainstS3(t *testing.T) {
	client := testsupport.S3Client(t)
	endpoint := testsupport.S3Endpoint(t)
	bucket := testsupport.NewBucket(t, client)
	local, err := archive.NewLocal(filepath.Dir(sample))
	if err != nil {
		t.Fatal(err)
	}
	remote := archive.NewS3(client, bucket)
	ctx := context.Background()
	err = local.List(ctx, "demo/", false, func(e archive.Entry) error {
		b, err := local.Get(ctx, e.Key)
		if err != nil {
			return err
		}
		return remote.Put(ctx, e.Key, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Legacy objects are dated by their modification time: give a local copy
	// the times S3 gave the uploads, or the two differ across midnight.
	copyDir := t.TempDir()
	copyStore, err := archive.NewLocal(copyDir)
	if err != nil {
		t.Fatal(err)
	}
	err = remote.List(ctx, "demo/", false, func(e archive.Entry) error {
		b, err := local.Get(ctx, e.Key)
		if err != nil {
			return err
		}
		if err := copyStore.Put(ctx, e.Key, b); err != nil {
			return err
		}
		return os.Chtimes(filepath.Join(copyDir, filepath.FromSlash(e.Key)), e.LastModified, e.LastModified)
	})
	if err != nil {
		t.Fatal(err)
	}
	localCopy := filepath.Join(copyDir, "demo")
	env := []string{"AWS_ACCESS_KEY_ID=" + testsupport.AccessKey, "AWS_SECRET_ACCESS_KEY=" + testsupport.SecretKey,
		"AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true", "AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
	for _, args := range [][]string{
		{"search", "--include-legacy", "-o", "ndjson"},
		{"search", "--from", "2024-03-02", "--to", "2024-03-03", "--status", "FAILED,TIMED_OUT", "-o", "json"},
		{"stats", "--by", "error", "-o", "json"},
	} {
		want, _, wantCode := dla(t, nil, "", append(args, "--archive", localCopy)...)
		got, stderr, code := dla(t, env, "", append(args, "--archive", "s3://"+bucket+"/demo", "--endpoint-url", endpoint, "--concurrency", "32")...)
		if code != wantCode {
			t.Fatalf("%v: exit %d over S3, %d locally: %s", args, code, wantCode, stderr)
		}
		// Sizes and keys are the same; only nothing else may differ.
		if got != want {
			t.Errorf("%v: S3 output differs from the local archive's", args)
		}
	}
	var views []map[string]any
	out, _, _ := dla(t, env, "", "search", "--archive", "s3://"+bucket+"/demo", "--endpoint-url", endpoint, "--date", "2024-03-02", "-o", "json")
	if err := json.Unmarshal([]byte(out), &views); err != nil || len(views) == 0 {
		t.Fatalf("json output: %v (%d records)", err, len(views))
	}
	// Wrong credentials are an AWS credentials/permission failure: exit 4.
	bad := append(env, "AWS_SECRET_ACCESS_KEY=wrong")
	if _, stderr, code := dla(t, bad, "", "search", "--archive", "s3://"+bucket+"/demo", "--endpoint-url", endpoint); code != 4 {
		t.Errorf("wrong secret: exit %d, want 4: %s", code, stderr)
	}
}
