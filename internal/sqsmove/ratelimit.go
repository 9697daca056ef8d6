package sqsmove

import (
	"context"
	"math"
	"sync"
	"time"
)

// limiter holds --rate from the first second on: at most cap messages in
// any window of length window (cap/window is the rate). A token bucket
// starts full, which let a run send a whole burst plus a second's worth in
// its first second (93 messages under --rate 50); this one starts empty of
// history and also spaces batches out, so the sends are smooth.
type limiter struct {
	mu     sync.Mutex
	cap    int
	window time.Duration
	gap    time.Duration // the spacing of one message at the rate
	log    []stamp       // grants inside the current window, oldest first
	next   time.Time     // earliest start of the next grant
	now    func() time.Time
}

type stamp struct {
	at time.Time
	n  int
}

// newLimiter allows r messages per second: cap = max(1, floor(r)) messages
// in any window of cap/r seconds (one second when r is whole).
func newLimiter(r float64) *limiter {
	c := max(1, int(math.Floor(r)))
	return &limiter{cap: c, window: time.Duration(float64(c) / r * float64(time.Second)),
		gap: time.Duration(float64(time.Second) / r), now: time.Now}
}

// maxBatch is the largest n wait accepts.
func (l *limiter) maxBatch() int { return l.cap }

// wait blocks until n more messages may be sent, and counts them as sent.
func (l *limiter) wait(ctx context.Context, n int) error {
	n = min(n, l.cap)
	for {
		l.mu.Lock()
		now := l.now()
		for len(l.log) > 0 && now.Sub(l.log[0].at) >= l.window {
			l.log = l.log[1:]
		}
		used := 0
		for _, s := range l.log {
			used += s.n
		}
		var until time.Time
		switch {
		case now.Before(l.next):
			until = l.next
		case used+n > l.cap:
			// The oldest grants leave the window one by one.
			need := used + n - l.cap
			for _, s := range l.log {
				until = s.at.Add(l.window)
				if need -= s.n; need <= 0 {
					break
				}
			}
		default:
			l.log = append(l.log, stamp{now, n})
			l.next = now.Add(time.Duration(n) * l.gap)
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		t := time.NewTimer(until.Sub(now))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
