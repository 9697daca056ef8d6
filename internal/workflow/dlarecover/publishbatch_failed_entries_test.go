package dlarecover

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
	"github.com/deadletter/deadletter/internal/recovery"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/testsupport"
)

// failEntries makes SNS refuse one entry of every third PublishBatch call
// of the granule topic, as SNS does: the entry is taken out of the request
// (never delivered), and the reply lists it among the Failed. It returns
// the granule IDs of the messages so refused.
func failEntries(proxy *testsupport.Proxy, topicARN string) (refused func() map[string]bool) {
	var mu sync.Mutex
	calls := 0
	ids := map[string]bool{}
	failing := map[string]string{} // original request body -> the Id refused
	proxy.SetHook(func(_ string, body []byte) ([]byte, *testsupport.Reply) {
		q, err := url.ParseQuery(string(body))
		if err != nil || q.Get("Action") != "PublishBatch" || q.Get("TopicArn") != topicARN {
			return nil, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls%3 != 1 {
			return nil, nil
		}
		n := 0
		for q.Has(fmt.Sprintf("PublishBatchRequestEntries.member.%d.Id", n+1)) {
			n++
		}
		if n < 2 {
			calls--
			return nil, nil
		}
		last := fmt.Sprintf("PublishBatchRequestEntries.member.%d.", n)
		failing[string(body)] = q.Get(last + "Id")
		ids[gjson.Get(q.Get(last+"Message"), "record.granuleId").String()] = true
		for k := range q {
			if strings.HasPrefix(k, last) {
				q.Del(k)
			}
		}
		return []byte(q.Encode()), nil
	})
	proxy.SetAfter(func(_ string, req, resp []byte) []byte {
		mu.Lock()
		id, ok := failing[string(req)]
		mu.Unlock()
		if !ok {
			return resp
		}
		failed := `<Failed><member><Id>` + id + `</Id><Code>InternalError</Code><Message>test proxy</Message><SenderFault>false</SenderFault></member></Failed>`
		return regexp.MustCompile(`<Failed>.*?</Failed>|<Failed/>`).ReplaceAll(resp, []byte(failed))
	})
	return func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		return ids
	}
}

// TestPublishBatchFailedEntriesLeaveOnlyTheirObjects: SNS answers
// PublishBatch calls of the granule topic with one entry failed (the
// others published), at concurrency 8, the notifications of many objects
// sharing each call. What must hold: an object one of whose
// notifications failed is left in place and the run stops; every object
// deleted had each granule it wrote announced; the summary counts exactly
// what the topics received; the counts add up.
func TestPublishBatchFailedEntriesLeaveOnlyTheirObjects(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, conc := range []int{8} {
		fx := newRunFixture(t)
		fx.generate(t, gen.Options{Stack: "s", Count: 120, Seed: 13, Days: 1, MinGranules: 2, MaxGranules: 4, Malformed: -1})
		topics := testsupport.NewNotificationTopics(t)
		proxy := testsupport.NewProxy(t, testsupport.SQSEndpoint(t))
		refused := failEntries(proxy, topics.Topics.Granule)
		pub, err := snspub.New(testsupport.SNSClientAt(proxy.URL), topics.Topics)
		if err != nil {
			t.Fatal(err)
		}
		r := &recoverRun{Store: fx.store, Layout: dla.Layout{Stack: "s"}, DB: testsupport.CumulusDB(t, fx.pool), Pool: fx.pool,
			Writer: &recovery.Writer{Now: func() time.Time { return now }, Notifier: pub}, Concurrency: conc,
			Now: func() time.Time { return now }, Sum: &Summary{Selected: fx.spool.Len()}, Objects: fx.spool}
		var lines []Object
		runErr := r.runScope(context.Background(), selection.Scope{Layout: dla.Layout{Stack: "s"}}, func(o Object) error {
			lines = append(lines, o)
			return nil
		})
		var stopped *StoppedError
		if !errors.As(runErr, &stopped) {
			t.Fatalf("concurrency %d: Run returned %v, want a stop", conc, runErr)
		}
		name := "concurrency " + strconv.Itoa(conc)
		received := map[recovery.Topic][]string{}
		granules := map[string]bool{}
		for _, topic := range recovery.Topics {
			received[topic] = topics.Messages(t, topic)
		}
		for _, m := range received[recovery.TopicGranule] {
			granules[gjson.Get(m, "record.granuleId").String()] = true
		}
		inPlace := map[string]bool{}
		for _, k := range fx.left() {
			inPlace[k] = true
		}
		leftByRefusal := 0
		for _, o := range lines {
			switch o.Action {
			case "deleted":
				if inPlace[o.Key] {
					t.Errorf("%s: %s reported deleted, still in place", name, o.Key)
				}
				for _, g := range o.Granules {
					if g.Outcome == recovery.Written && !granules[g.GranuleID] {
						t.Errorf("%s: %s deleted, its granule %s never announced", name, o.Key, g.GranuleID)
					}
				}
			case "left":
				if !inPlace[o.Key] {
					t.Errorf("%s: %s reported left, gone", name, o.Key)
				}
				if strings.Contains(o.Error, "test proxy") {
					leftByRefusal++
				}
			}
		}
		if len(refused()) == 0 || leftByRefusal == 0 {
			t.Fatalf("%s: %d notifications refused, %d objects left by a refusal: the fault did not land", name, len(refused()), leftByRefusal)
		}
		s := r.Sum
		for _, topic := range recovery.Topics {
			counted := map[recovery.Topic]int{recovery.TopicExecution: s.SNS.Execution, recovery.TopicGranule: s.SNS.Granule, recovery.TopicPdr: s.SNS.Pdr}[topic]
			if counted != len(received[topic]) {
				t.Errorf("%s: %s: %d counted published, %d received", name, topic, counted, len(received[topic]))
			}
		}
		if s.Processed+s.Left+s.NotProcessed != s.Selected {
			t.Errorf("%s: counts do not add up: %+v", name, s)
		}
		t.Logf("%s: %d refused, %d left by it; %+v", name, len(refused()), leftByRefusal, s)
	}
}
