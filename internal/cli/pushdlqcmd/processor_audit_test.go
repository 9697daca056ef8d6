package pushdlqcmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cli/iostreams"
	"github.com/deadletter/deadletter/internal/lambdactl"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/sqsmove"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// processor arm and disarm each leave a record naming the function, the
// settings they changed and the mapping's new state; with an audit
// location that cannot be written, arm changes nothing.
func TestProcessorArmAndDisarmLeaveRecordsOfWhatTheyChanged(t *testing.T) {
	testsupport.SetAWSEnv(t, map[string]string{"AWS_ENDPOINT_URL_S3": testsupport.S3Endpoint(t)})
	e := newProcessorEnv(t)
	state := t.TempDir()
	run := func(args ...string) (int, string) {
		ios, _, _, errOut := iostreams.Test()
		f := NewFactory(ios, func(string) string { return "" })
		f.StateDir = func() (string, error) { return state, nil }
		f.Poll = time.Millisecond
		f.Lambda = func(context.Context) (lambdactl.API, error) {
			return awsconfig.Lambda(testsupport.AWSConfig(), awsconfig.Settings{EndpointURL: e.fake.URL}), nil
		}
		f.SQS = func(context.Context) (sqsmove.API, string, error) { return testsupport.SQSClient(t), "fauxqs", nil }
		return Run(context.Background(), f, append([]string{"processor"}, args...)), errOut.String()
	}
	before := e.fake.Env(fnName)
	code, stderr := run("arm", "--function", fnName, "--window", armWindow, "--codes", "1004", "--yes", "--audit", "s3://no-such-bucket-z/p")
	if code != 1 || !strings.Contains(stderr, "the audit record cannot be written to s3://no-such-bucket-z/p/") || !strings.Contains(stderr, "nothing was changed") {
		t.Errorf("unwritable audit: exit %d\n%s", code, stderr)
	}
	if got := e.fake.Env(fnName); got[pushpolicy.EnvErrorCodes] != before[pushpolicy.EnvErrorCodes] || e.fake.Mapping("map-1").State != "Disabled" {
		t.Errorf("arm changed the function with an unwritable audit: %v, mapping %s", got, e.fake.Mapping("map-1").State)
	}

	if code, stderr := run("arm", "--function", fnName, "--window", armWindow, "--codes", "1004", "--max-concurrency", "2", "--yes", "--reason", "INC-5"); code != 0 {
		t.Fatalf("arm: exit %d\n%s", code, stderr)
	}
	if code, stderr := run("disarm", "--function", fnName, "--yes", "--reason", "INC-5 done"); code != 0 {
		t.Fatalf("disarm: exit %d\n%s", code, stderr)
	}
	if code, stderr := run("arm", "--function", fnName, "--window", armWindow, "--codes", "1004", "--yes", "--dry-run"); code != 0 {
		t.Fatalf("arm --dry-run: exit %d\n%s", code, stderr)
	}
	st, err := archive.NewLocal(state + "/audit")
	if err != nil {
		t.Fatal(err)
	}
	runs := loadRuns(t, st, "")
	if len(runs) != 2 {
		t.Fatalf("%d records, want 2 (arm, disarm; no dry run)", len(runs))
	}
	disarm, arm := runs[0], runs[1]
	if arm.Verb != "processor arm" || arm.Reason != "INC-5" || !strings.HasSuffix(arm.Target.Function, ":function:"+fnName) || arm.Target.DLQ != e.dlq {
		t.Errorf("arm record: verb %q reason %q target %+v", arm.Verb, arm.Reason, arm.Target)
	}
	var items []string
	for _, it := range arm.Items {
		items = append(items, it.Key+"="+it.Action+":"+it.Result)
	}
	want := "PROCESS_END_AT=set:2025-11-14T09:00:00.000Z PROCESS_ERROR_CODES=set:1004 PROCESS_START_AT=set:2025-11-14T08:30:00.000Z mapping map-1=enabled:maximum concurrency 2"
	if strings.Join(items, " ") != want {
		t.Errorf("arm items:\n %s\nwant\n %s", strings.Join(items, " "), want)
	}
	if c := arm.Finished.Counts; c["settings_changed"] != 3 || c["mapping_enabled"] != 1 || arm.Finished.ExitCode != 0 {
		t.Errorf("arm counts %v exit %d", c, arm.Finished.ExitCode)
	}
	if disarm.Verb != "processor disarm" || len(disarm.Items) != 1 || disarm.Items[0].Action != "disabled" || disarm.Finished.Counts["mapping_disabled"] != 1 {
		t.Errorf("disarm record: verb %q items %+v counts %v", disarm.Verb, disarm.Items, disarm.Finished.Counts)
	}
}
