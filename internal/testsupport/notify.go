package testsupport

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/recovery"
)

// Notification is one published SNS message.
type Notification struct {
	Topic   recovery.Topic
	Message string // the SNS Message: v21's JSON
}

// Key identifies a notification the way the seed-3 oracle lists them
// (recovery-oracle.json "sns"): execution "arn|status", granule
// "event|collectionId|granuleId|status", PDR "pdrName|status".
func (n Notification) Key() string { return NotificationKey(n.Topic, n.Message) }

// NotificationKey is Notification.Key for a topic and message.
func NotificationKey(topic recovery.Topic, message string) string {
	m := gjson.Parse(message)
	switch topic {
	case recovery.TopicExecution:
		return m.Get("arn").String() + "|" + m.Get("status").String()
	case recovery.TopicGranule:
		r := m.Get("record")
		return m.Get("event").String() + "|" + r.Get("collectionId").String() + "|" + r.Get("granuleId").String() + "|" + r.Get("status").String()
	case recovery.TopicPdr:
		return m.Get("pdrName").String() + "|" + m.Get("status").String()
	}
	return fmt.Sprintf("%s?%s", topic, message)
}

// RecordingNotifier is a recovery.Notifier that keeps what it is given,
// in order. Fail makes a topic's publishes fail.
type RecordingNotifier struct {
	mu   sync.Mutex
	All  []Notification
	Fail map[recovery.Topic]error
}

var _ recovery.Notifier = (*RecordingNotifier)(nil)

func (r *RecordingNotifier) Publish(_ context.Context, topic recovery.Topic, message []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.Fail[topic]; err != nil {
		return err
	}
	r.All = append(r.All, Notification{Topic: topic, Message: string(message)})
	return nil
}

// Keys are the keys of the topic's notifications, in publishing order.
func (r *RecordingNotifier) Keys(topic recovery.Topic) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.All {
		if n.Topic == topic {
			out = append(out, n.Key())
		}
	}
	return out
}

// SortedKeys returns keys sorted (a multiset to compare).
func SortedKeys(keys []string) []string {
	out := append([]string(nil), keys...)
	sort.Strings(out)
	return out
}
