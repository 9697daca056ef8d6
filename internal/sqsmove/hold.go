package sqsmove

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// State is where a held message stands.
type State uint8

const (
	Held     State = iota // received, invisible, not yet dealt with
	Done                  // deleted from the queue (it is safely elsewhere)
	Released              // made visible again
	// Extra: received after the scan was told to stop (another message of
	// the same receive). Never reported, sent or deleted; only released.
	Extra
	// Lost: the run no longer holds it: a renewal of its visibility was
	// refused as "receipt handle invalid / message not in flight" (another
	// consumer may have received it), or the hold's deadline passed (the
	// process was paused past its visibility timeout). It is never sent,
	// deleted or released afterwards: it is visible again, or someone
	// else's.
	Lost
)

// Hold receives every message of a queue and keeps it invisible until it
// is deleted or released. Received messages are spooled to a temporary
// file, so memory stays flat however deep the queue is: in memory there is
// only a seen-set of message ids and one state byte per message.
type Hold struct {
	api        API
	queueURL   string
	visibility time.Duration

	mu       sync.Mutex
	spool    *os.File
	w        *bufio.Writer
	written  int64  // bytes of spool flushed or buffered
	rec      []byte // the record being spooled (spool.go)
	uuidSeen map[[16]byte]int32
	strSeen  map[string]int32
	rehandle map[int32]string // newer receipt handles of messages received twice
	state    []State
	extras   int       // messages held as Extra
	done     int       // messages deleted (Done)
	extended time.Time // when visibility was last set for every held message
	// safeUntil is a time before which every held message is still
	// invisible to others: the start of the first receive, or of the last
	// renewal that succeeded for every message, plus the visibility
	// timeout. Past it the hold is over.
	safeUntil time.Time
	// Redelivered counts messages received more than once during the run
	// (a visibility timeout that ran out, or a retried receive).
	Redelivered  int
	beforeExtend func(until time.Time)
}

// BeforeExtend sets a function told the new deadline before the held
// messages' visibility is extended to it: the journal records it first,
// so that a resume knows how long they may stay invisible.
func (h *Hold) BeforeExtend(fn func(until time.Time)) {
	h.mu.Lock()
	h.beforeExtend = fn
	h.mu.Unlock()
}

// NewHold prepares a hold on a queue; Close frees the spool. With a nil
// api the hold has no source queue (messages loaded from a file): deleting
// only marks a message done, and releasing does nothing.
//
// The spool holds message bodies. It is unlinked as soon as it is open, so
// it never outlives the process, even one killed with SIGKILL.
func NewHold(api API, queueURL string, visibility time.Duration) (*Hold, error) {
	f, err := os.CreateTemp("", "deadletter-spool-*")
	if err != nil {
		return nil, fmt.Errorf("create the spool file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("unlink the spool file: %w", err)
	}
	return &Hold{
		api: api, queueURL: queueURL, visibility: visibility,
		spool: f, w: bufio.NewWriterSize(f, 256<<10),
		uuidSeen: map[[16]byte]int32{}, strSeen: map[string]int32{}, rehandle: map[int32]string{},
	}, nil
}

// Close frees the spool file (already unlinked). Call Release first.
func (h *Hold) Close() error {
	return h.spool.Close()
}

// Deadline is a time by which every message held so far is visible again
// unless the hold is extended: each was received or extended before now.
func (h *Hold) Deadline() string {
	return time.Now().Add(h.visibility).UTC().Format(time.RFC3339Nano)
}

// Len is the number of distinct messages held so far.
func (h *Hold) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.state)
}

// add records a received message: a new one is spooled, a known one only
// gets its receipt handle refreshed.
func (h *Hold) add(m *Message, st State) (ord int, fresh bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	uuid, isUUID := parseUUID(m.MessageID)
	var known int32
	var seen bool
	if isUUID {
		known, seen = h.uuidSeen[uuid]
	} else {
		known, seen = h.strSeen[m.MessageID]
	}
	if seen {
		h.Redelivered++
		if s := h.state[known]; s == Held || s == Extra {
			h.rehandle[known] = m.ReceiptHandle
		}
		return int(known), false, nil
	}
	o := int32(len(h.state))
	h.rec = appendSpoolRecord(h.rec[:0], o, m)
	b := h.rec
	if _, err := h.w.Write(b); err != nil {
		return 0, false, fmt.Errorf("spool message %s: %w", m.MessageID, err)
	}
	h.written += int64(len(b))
	h.state = append(h.state, st)
	if st == Extra {
		h.extras++
	}
	if isUUID {
		h.uuidSeen[uuid] = o
	} else {
		h.strSeen[m.MessageID] = o
	}
	return int(o), true, nil
}

// Each streams every held message from the spool in receive order, with
// its newest receipt handle and its state at the time it is read.
func (h *Hold) Each(fn func(ord int, st State, m *Message) error) error {
	h.mu.Lock()
	if err := h.w.Flush(); err != nil {
		h.mu.Unlock()
		return fmt.Errorf("flush the spool: %w", err)
	}
	size := h.written
	h.mu.Unlock()
	sr := spoolReader{r: bufio.NewReaderSize(io.NewSectionReader(h.spool, 0, size), 256<<10)}
	for {
		ord, m, err := sr.next()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the spool: %w", err)
		}
		h.mu.Lock()
		if int(ord) >= len(h.state) {
			h.mu.Unlock()
			return fmt.Errorf("read the spool: %w", errSpoolRecord)
		}
		st := h.state[ord]
		if hnd, ok := h.rehandle[ord]; ok {
			m.ReceiptHandle = hnd
		}
		h.mu.Unlock()
		if err := fn(int(ord), st, m); err != nil {
			return err
		}
	}
}

// extraCount is how many messages were held as Extra.
func (h *Hold) extraCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.extras
}

// Outstanding is the number of distinct messages held so far that were
// not deleted: they are invisible in the queue on this run's account
// (or Lost, or already released).
func (h *Hold) Outstanding() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.state) - h.done
}

// anyHeld reports whether a message is still Held or Extra: a walk over
// the spool for them is needed.
func (h *Hold) anyHeld() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.state {
		if s == Held || s == Extra {
			return true
		}
	}
	return false
}

// InState counts the messages received so far that are in state st.
func (h *Hold) InState(st State) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.state {
		if s == st {
			n++
		}
	}
	return n
}

// Readmit makes the Extra messages (received after a scan was told to
// stop, still invisible) Held again and passes each to fn, in receive
// order, as a scan would, until fn says stop (the rest stay Extra). A
// caller that reads on after its scan stopped at SQS's in-flight limit
// deals with them in its next round: released instead, they would be
// received again and not passed on (the hold has seen them).
func (h *Hold) Readmit(fn func(ord int, m *Message) (stop bool)) error {
	if h.extraCount() == 0 {
		return nil
	}
	stopped := false
	return h.Each(func(ord int, st State, m *Message) error {
		if st != Extra || stopped {
			return nil
		}
		h.mu.Lock()
		if h.state[ord] != Extra { // lost meanwhile
			h.mu.Unlock()
			return nil
		}
		h.state[ord] = Held
		h.extras--
		h.mu.Unlock()
		stopped = fn(ord, m)
		return nil
	})
}

// State reports a message's state.
func (h *Hold) State(ord int) State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state[ord]
}

func (h *Hold) setState(ord int, st State) {
	h.mu.Lock()
	if st == Done && h.state[ord] != Done {
		h.done++
	}
	h.state[ord] = st
	delete(h.rehandle, int32(ord))
	h.mu.Unlock()
}

// handle is a message's newest receipt handle.
func (h *Hold) handle(ord int, m *Message) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hnd, ok := h.rehandle[int32(ord)]; ok {
		return hnd
	}
	return m.ReceiptHandle
}

// parseUUID reads the usual SQS message id form into 16 bytes, which keeps
// the seen-set small.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	hexs := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(hexs)); err != nil {
		return u, false
	}
	// Only the canonical lower-case form maps one to one onto its bytes.
	if strings.ToLower(s) != s {
		return u, false
	}
	return u, true
}
