// Package gen generates push-DLQ message bodies for demos, tests and
// benchmarks: a deterministic mix of FailedPushCommands like the ones an
// SNS throttling incident leaves behind.
package gen

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Options shape the mix.
type Options struct {
	Count      int
	Seed       uint64
	Start      time.Time // incident window start; createdAt values fall in [Start, Start+Span]
	Span       time.Duration
	Priorities int // priorities 1..Priorities
}

// Generate calls yield with each body. The mix: 70% PushFailed (1004),
// 10% NotificationNotFound (2003), 10% PublishFailed (1001), 5% 1004 from
// a day before the window, 5% manual redrives without error metadata.
// createdAt is mostly epoch milliseconds, sometimes a numeric string or
// ISO-8601, as real producers vary.
func Generate(o Options, yield func(i int, body string)) {
	if o.Priorities < 1 {
		o.Priorities = 3
	}
	if o.Span <= 0 {
		o.Span = 30 * time.Minute
	}
	r := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	for i := range o.Count {
		created := o.Start.Add(time.Duration(r.Int64N(int64(o.Span)))).UnixMilli()
		priority := 1 + r.IntN(o.Priorities)
		code, msg := 1004, "one or more device publishes failed: Rate exceeded"
		meta := true
		switch roll := r.IntN(100); {
		case roll < 70:
		case roll < 80:
			code, msg = 2003, "notification not found"
		case roll < 90:
			code, msg = 1001, "SNS publish failed: Throttling"
		case roll < 95:
			created -= 24 * 3600 * 1000
		default:
			meta = false
		}
		var createdAt string
		switch r.IntN(10) {
		case 0:
			createdAt = fmt.Sprintf(`"%d"`, created)
		case 1:
			createdAt = `"` + time.UnixMilli(created).UTC().Format("2006-01-02T15:04:05.000Z") + `"`
		default:
			createdAt = fmt.Sprint(created)
		}
		action := "push"
		if r.IntN(5) == 0 {
			action = "schedule"
		}
		body := fmt.Sprintf(`{"action":%q,"notificationId":"ntf-%08d","appId":"app-%d","priority":%d,"createdAt":%s,"payload":{"title":"Sale ends soon","badge":%d}`,
			action, i, r.IntN(20), priority, createdAt, r.IntN(9))
		if meta {
			body += fmt.Sprintf(`,"errorCode":%d,"errorMessage":%q`, code, msg)
		}
		yield(i, body+"}")
	}
}
