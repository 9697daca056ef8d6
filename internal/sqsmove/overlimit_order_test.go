package sqsmove_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/deadletter/deadletter/internal/sqsmove"
)

// refusedFirst answers the second ReceiveMessage with SQS's OverLimit and
// hands the first one's messages (received from the server) to the hold
// only after that refusal was returned: the order a loaded machine can
// give, since the refusal carries nothing to read.
type refusedFirst struct {
	*sqs.Client
	calls   atomic.Int32
	refused chan struct{}
	once    sync.Once
}

func (r *refusedFirst) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	switch r.calls.Add(1) {
	case 1:
		out, err := r.Client.ReceiveMessage(ctx, in, opts...)
		<-r.refused
		time.Sleep(50 * time.Millisecond) // the refusal is handled first
		return out, err
	case 2:
		r.once.Do(func() { close(r.refused) })
		return nil, &smithy.GenericAPIError{Code: "OverLimit", Message: "Too many messages in flight."}
	default:
		return r.Client.ReceiveMessage(ctx, in, opts...)
	}
}

// A scan stopped by SQS's in-flight limit still reads what the receives
// already in flight brought, even when the refusal is handled before
// them: the scan says it read those messages (they are not set aside as
// Extra, which a streamed replay would only release, reporting "read the
// first 0"), and the limit's count includes them.
func TestAScanStoppedAtTheInFlightLimitReadsWhatReceivesInFlightBrought(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10, false)
	api := &refusedFirst{Client: f.api, refused: make(chan struct{})}
	hold := f.newHold(api, 60*time.Second)
	seen := 0
	err := hold.Receive(context.Background(), sqsmove.ReceiveOptions{Wait: time.Second, Receivers: 2}, func(int, *sqsmove.Message) bool {
		seen++
		return false
	})
	var limit *sqsmove.InFlightLimitError
	if !errors.As(err, &limit) {
		t.Fatalf("want the in-flight limit, got %v", err)
	}
	if seen == 0 || seen != hold.InState(sqsmove.Held) || hold.InState(sqsmove.Extra) != 0 || limit.Held != seen {
		t.Errorf("read %d, %d held, %d extra; the limit says %d", seen, hold.InState(sqsmove.Held), hold.InState(sqsmove.Extra), limit.Held)
	}
	if api.calls.Load() != 2 {
		t.Errorf("%d receives, want 2: none after the refusal", api.calls.Load())
	}
	f.release(hold)
	f.wantEachOnce(func(string) bool { return true }) // released: all in the DLQ, once
}

// refusedTwice answers the second and third ReceiveMessage with OverLimit
// (each refusal waits until both were asked, so that no receiver stops
// before the other refusal comes), and hands the first one's messages to
// the hold only after both refusals were returned.
type refusedTwice struct {
	*sqs.Client
	calls    atomic.Int32
	asked    sync.WaitGroup // the two refused calls have arrived
	answered sync.WaitGroup // the two refusals are being returned
}

func (r *refusedTwice) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	switch r.calls.Add(1) {
	case 1:
		out, err := r.Client.ReceiveMessage(ctx, in, opts...)
		r.answered.Wait()
		time.Sleep(50 * time.Millisecond) // both refusals are handled first
		return out, err
	case 2, 3:
		r.asked.Done()
		r.asked.Wait()
		r.answered.Done()
		return nil, &smithy.GenericAPIError{Code: "OverLimit", Message: "Too many messages in flight."}
	default:
		return r.Client.ReceiveMessage(ctx, in, opts...)
	}
}

// A second refusal is the same limit, not a failure that stops the scan:
// what the receive in flight brought is still read.
func TestAScanRefusedTwiceAtTheInFlightLimitStillReadsWhatCameIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10, false)
	api := &refusedTwice{Client: f.api}
	api.asked.Add(2)
	api.answered.Add(2)
	hold := f.newHold(api, 60*time.Second)
	seen := 0
	err := hold.Receive(context.Background(), sqsmove.ReceiveOptions{Wait: time.Second, Receivers: 3}, func(int, *sqsmove.Message) bool {
		seen++
		return false
	})
	var limit *sqsmove.InFlightLimitError
	if !errors.As(err, &limit) {
		t.Fatalf("want the in-flight limit, got %v", err)
	}
	if seen == 0 || seen != hold.InState(sqsmove.Held) || hold.InState(sqsmove.Extra) != 0 || limit.Held != seen {
		t.Errorf("read %d, %d held, %d extra; the limit says %d", seen, hold.InState(sqsmove.Held), hold.InState(sqsmove.Extra), limit.Held)
	}
	if api.calls.Load() != 3 {
		t.Errorf("%d receives, want 3: none after the refusals", api.calls.Load())
	}
	f.release(hold)
	f.wantEachOnce(func(string) bool { return true })
}
