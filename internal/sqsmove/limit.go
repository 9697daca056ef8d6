package sqsmove

import (
	"fmt"

	"github.com/deadletter/deadletter/internal/awsconfig"
)

// InFlightLimitError is a scan stopped by SQS's in-flight limit: the queue
// refused to hand out more messages (OverLimit) while Held were received
// and not yet deleted or released. Nothing is lost: what was received is
// still held, and is released or processed as the caller decides.
type InFlightLimitError struct {
	Held int
	Err  error
}

func (e *InFlightLimitError) Error() string {
	return fmt.Sprintf("SQS's in-flight limit stopped the scan after %d messages (OverLimit: a queue lets about 120,000 messages, 20,000 for FIFO, be received and not yet deleted or released at once)", e.Held)
}

func (e *InFlightLimitError) Unwrap() error { return e.Err }

// inFlightLimit wraps a receive error that is SQS's OverLimit.
func (h *Hold) inFlightLimit(err error) error {
	if !awsconfig.IsInFlightLimit(err) {
		return nil
	}
	h.mu.Lock()
	n := len(h.state)
	h.mu.Unlock()
	return &InFlightLimitError{Held: n, Err: err}
}
