package sqsmove

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// The journal's writes start failing in the middle of a
// pipelined run (concurrency 3). Every send that reaches SQS must have its
// send record in the journal file already; the run stops with the error;
// and every message is in the DLQ or its target, never neither, and in
// both only when the journal has it in flight (uncertain) for a resume.
func TestJournalFailingMidPipelinedRunLosesNothing(t *testing.T) {
	t.Parallel()
	endpoint := testsupport.SQSEndpoint(t)
	c := testsupport.SQSClientAt(endpoint)
	proxy := testsupport.NewProxy(t, endpoint)
	api := testsupport.SQSClientAt(proxy.URL)
	prefix := "jfail" + testsupport.RandomHex(3) + "-"
	dlq := testsupport.CreateQueue(t, c, prefix+"dlq", nil)
	target := testsupport.CreateQueue(t, c, prefix+"P1", nil)
	var bodies []string
	for i := range 300 {
		bodies = append(bodies, fmt.Sprintf(`{"n":%d}`, i))
	}
	testsupport.SendBodies(t, c, dlq, bodies, nil)

	hold, err := NewHold(api, dlq, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	idOfBody := map[string]string{}
	if err := hold.Receive(context.Background(), ReceiveOptions{Wait: time.Second}, func(_ int, m *Message) bool {
		idOfBody[m.Body] = m.MessageID
		return false
	}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "j.ndjson")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bad []string
	sends, sendsAfterFail := 0, 0
	failed := false
	proxy.SetHook(func(op string, body []byte) ([]byte, *testsupport.Reply) {
		if op != "SendMessageBatch" {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		sends++
		if failed {
			sendsAfterFail++
		}
		res, err := ReadJournal(path)
		if err != nil {
			t.Error(err)
			return nil, nil
		}
		for _, e := range gjson.GetBytes(body, "Entries").Array() {
			if id := idOfBody[e.Get("MessageBody").Str]; !res.Uncertain[id] {
				bad = append(bad, id)
			}
		}
		return nil, nil
	})
	ro, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	good := j.f
	defer good.Close()
	sent := 0
	r := &Replayer{API: api, Hold: hold, Source: dlq, Journal: j, Concurrency: 3,
		Route: func(*Message) Route { return Route{Target: target} },
		OnResult: func(res Result) {
			mu.Lock()
			defer mu.Unlock()
			if res.Outcome == OutcomeSent {
				sent++
			}
			if sent == 60 && !failed {
				failed = true
				j.mu.Lock()
				j.f = ro // every later write fails (EBADF), as on a full disk
				j.mu.Unlock()
			}
		}}
	counts, runErr := r.Run(context.Background())
	if _, failures := hold.Release(context.Background()); len(failures) > 0 {
		t.Errorf("release failures: %v", failures)
	}
	if runErr == nil || !strings.Contains(runErr.Error(), "journal") {
		t.Errorf("the run ended with %v after its journal failed; want the journal's error", runErr)
	}
	mu.Lock()
	if !failed || len(bad) > 0 {
		t.Errorf("journal failed: %v; %d messages sent without their send record in the journal: %v", failed, len(bad), bad)
	}
	t.Logf("counts %+v, %d sends, %d after the failure", counts, sends, sendsAfterFail)
	mu.Unlock()
	if counts.Sent+counts.Abandoned+counts.Uncertain+counts.Failed != 300 || counts.Sent >= 300 {
		t.Errorf("counts %+v: want the 300 accounted for and the run stopped early", counts)
	}
	res, err := ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string][]string{}
	for name, u := range map[string]string{"dlq": dlq, "P1": target} {
		for _, m := range testsupport.Drain(t, c, u, 3*time.Second) {
			in[aws.ToString(m.Body)] = append(in[aws.ToString(m.Body)], name)
		}
	}
	for _, b := range bodies {
		got := in[b]
		switch {
		case len(got) == 0:
			t.Errorf("%s is in neither the DLQ nor the target", b)
		case len(got) == 2 && !res.Uncertain[idOfBody[b]] && !res.Moved[idOfBody[b]]:
			t.Errorf("%s is in both, but the journal has no record of its send", b)
		case len(got) > 2:
			t.Errorf("%s is in %v", b, got)
		}
	}
}
