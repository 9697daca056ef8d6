package sqsmove

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Journal events, in the order a message meets them.
const (
	EvRun              = "run"               // a run starts: what it replays, from where
	EvHeld             = "held"              // ids the run holds invisible, and until when (before any send)
	EvHoldUntil        = "hold_until"        // the run is about to keep its messages invisible until then
	EvSend             = "send"              // a batch is about to be sent (written and synced first)
	EvSent             = "sent"              // the target accepted the message
	EvParked           = "parked"            // re-sent to the source queue with a delay
	EvSendFailed       = "send_failed"       // the target refused it; it stays in the source
	EvUncertain        = "uncertain"         // sent, but no reply came: it may be in the target; it stays in the source
	EvDeleted          = "deleted"           // removed from the source after it was sent or parked
	EvDeleteFailed     = "delete_failed"     // sent, but still in the source: a resume deletes it
	EvSkippedDuplicate = "skipped_duplicate" // a resume found it already sent; deleted, not re-sent
	EvHoldLost         = "hold_lost"         // the run no longer held it when its turn came: not sent, not deleted
	EvSummary          = "summary"           // the run's counts
)

// Event is one journal line.
type Event struct {
	Time   string   `json:"time"`
	Event  string   `json:"event"`
	Batch  int64    `json:"batch,omitempty"`
	ID     string   `json:"id,omitempty"`
	IDs    []string `json:"ids,omitempty"`
	Target string   `json:"target,omitempty"`
	NewID  string   `json:"new_id,omitempty"`
	Until  string   `json:"until,omitempty"` // RFC 3339: held and hold_until events
	Error  string   `json:"error,omitempty"`
	Info   any      `json:"info,omitempty"`
}

// Journal is the write-ahead log of a replay: every batch is recorded and
// synced to disk before it is sent, and every outcome after. It holds
// message ids and queue URLs, never bodies or receipt handles.
type Journal struct {
	mu sync.Mutex
	f  *os.File
	// buf holds whole lines not yet written: the file only ever gets
	// whole lines, in one write each time, so it never ends in a partial
	// line while a run is writing it (another reader, or a run opening
	// it, would take that line for a torn one).
	buf  []byte
	Path string
	now  func() time.Time
	// Group commit: written counts the bytes handed to the file, synced
	// how many of them an fsync that began after they were written has
	// made durable. One fsync in progress (syncing) serves every Sync
	// whose lines were written before it began; the others wait for it
	// (synced) and start the next one if it did not cover them.
	written, synced int64
	syncing         bool
	syncDone        *sync.Cond
	syncErr         error // an fsync failed: what was written is not known to be durable
}

// OpenJournal appends to path, creating it (mode 0600) when missing.
func OpenJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if err := dropTornLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	return &Journal{f: f, Path: path, now: time.Now}, nil
}

// dropTornLine cuts a torn last line (a run killed while writing it) off
// the end of the journal, so that what is appended next starts a line of
// its own and every later reader can read the journal: ReadJournal forgives
// a torn last line only, never one in the middle.
func dropTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	if end == 0 {
		return nil
	}
	buf := make([]byte, 64<<10)
	for pos := end; pos > 0; {
		n := int64(len(buf))
		if n > pos {
			n = pos
		}
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != '\n' {
				continue
			}
			cut := pos + i + 1
			if cut == end {
				return nil // the last line is whole
			}
			return endLastLine(f, cut, end)
		}
	}
	return endLastLine(f, 0, end) // one line, without its newline
}

// endLastLine ends the journal's last line, which runs from start to end
// without a newline. A line that parses is an event whose newline alone
// was not written (a buffer flushed right before it): ReadJournal acts on
// it, so it is kept and completed. Only a line that does not parse is torn
// and cut off.
func endLastLine(f *os.File, start, end int64) error {
	last, err := io.ReadAll(io.NewSectionReader(f, start, end-start))
	if err != nil {
		return err
	}
	var ev Event
	if json.Unmarshal(last, &ev) != nil {
		return truncateSync(f, start)
	}
	if _, err := f.Write([]byte{'\n'}); err != nil { // O_APPEND: at the end
		return fmt.Errorf("end its last line: %w", err)
	}
	return f.Sync()
}

func truncateSync(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("cut off its torn last line: %w", err)
	}
	return f.Sync()
}

// Write buffers one event.
func (j *Journal) Write(ev Event) error {
	if j == nil {
		return nil
	}
	now := j.now().UTC()
	j.mu.Lock()
	defer j.mu.Unlock()
	start := len(j.buf)
	b, err := appendEvent(j.buf, now, &ev)
	if err != nil {
		j.buf = j.buf[:start]
		return err
	}
	j.buf = append(b, '\n')
	if len(j.buf) >= journalBuffer {
		return j.flush()
	}
	return nil
}

// journalBuffer is how many bytes of whole lines Write keeps before it
// writes them out.
const journalBuffer = 64 << 10

// flush writes the buffered lines in one write. j.mu is held.
func (j *Journal) flush() error {
	if len(j.buf) == 0 {
		return nil
	}
	n, err := j.f.Write(j.buf)
	j.written += int64(n)
	j.buf = j.buf[:0]
	if err != nil {
		// Lines were lost: no later Sync may say they are durable.
		j.syncErr = fmt.Errorf("write journal %s: %w", j.Path, err)
		return j.syncErr
	}
	return nil
}

// Sync writes buffered events to disk: when it returns nil, every event
// written before it was called is durable. Concurrent Syncs share fsyncs
// (group commit): one that finds an fsync in progress waits for it, and
// starts another only when that one began before its events were written.
func (j *Journal) Sync() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	// The journal's end, counting the lines still buffered: this Sync
	// returns once an fsync has covered it. The lines are written out by
	// whichever Sync starts the next fsync (one write for every waiting
	// Sync's lines, not one each).
	return j.syncLocked(j.written + int64(len(j.buf)))
}

// end is the journal's end, lines still buffered included: syncTo(end())
// makes every event written so far durable.
func (j *Journal) end() int64 {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.written + int64(len(j.buf))
}

// syncTo is Sync for the events written before end() returned want: it
// returns at once, with no fsync, when a Sync since then already covered
// them, though other events were written after them.
func (j *Journal) syncTo(want int64) error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncLocked(want)
}

// syncLocked makes the journal durable up to want (bytes from the start
// of this Journal's writes, buffered ones included). j.mu is held.
func (j *Journal) syncLocked(want int64) error {
	if j.syncDone == nil {
		j.syncDone = sync.NewCond(&j.mu)
	}
	for {
		if j.syncErr != nil {
			return j.syncErr
		}
		if j.synced >= want {
			return nil
		}
		if !j.syncing {
			break
		}
		j.syncDone.Wait()
	}
	// This Sync starts the next fsync. It first lets the goroutines that
	// are ready to run go ahead: a worker whose send just came back writes
	// its records and waits for this fsync rather than starting one more.
	j.syncing = true
	j.mu.Unlock()
	runtime.Gosched()
	j.mu.Lock()
	if err := j.flush(); err != nil {
		// Other Syncs' lines were in that write: none of them is durable
		// (flush made the error stick).
		j.syncing = false
		j.syncDone.Broadcast()
		return err
	}
	upto := j.written // everything handed to the file before this fsync begins
	j.mu.Unlock()
	err := dataSync(j.f) // appends only: the size change is flushed with the data
	j.mu.Lock()
	j.syncing = false
	if err != nil {
		j.syncErr = fmt.Errorf("sync journal %s: %w", j.Path, err)
	} else if upto > j.synced {
		j.synced = upto
	}
	j.syncDone.Broadcast()
	return j.syncErr
}

// Close syncs and closes the journal.
func (j *Journal) Close() error {
	if j == nil {
		return nil
	}
	err := j.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Resume is what an earlier run's journal says.
type Resume struct {
	// Moved holds the ids the journal shows as sent or parked: a resume
	// deletes them from the source if they are still there, and never sends
	// them again.
	Moved map[string]bool
	// Uncertain holds the ids whose send has no known outcome: a batch that
	// was being sent when the run stopped, or a send whose reply was lost
	// (journalled as uncertain). They may be in the target already; a
	// resume sends them again, and they are the only possible duplicates.
	Uncertain map[string]bool
	// Held holds the ids an interrupted run (one without a summary) held
	// invisible and did not delete: they come back to the source by
	// HeldUntil, and a resume must not scan before then.
	Held      map[string]bool
	HeldUntil time.Time
	// Interrupted counts the runs of the journal that have no summary.
	Interrupted int
	// First is the event of the journal's first line, and Lines the number
	// of its lines that parse: a journal that is not empty starts with a
	// run event.
	First string
	Lines int
	// Sources lists the source queues (the run events' targets) of the
	// journal's runs, each once, in order.
	Sources []string
	// LastFinished says the journal's last run ended with its summary (a
	// journal whose last run has none was killed, or is being written).
	LastFinished bool
}

// ReadJournal reads a journal written by an earlier run. A torn last line
// (the process was killed while writing it) is ignored.
func ReadJournal(path string) (Resume, error) {
	f, err := os.Open(path)
	if err != nil {
		return Resume{}, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	r := Resume{Moved: map[string]bool{}, Uncertain: map[string]bool{}, Held: map[string]bool{}}
	// The messages the current run holds, and until when; a run that ends
	// with a summary released what it still held.
	cur, curUntil, open := map[string]bool{}, time.Time{}, false
	endRun := func(completed bool) {
		if open && !completed {
			r.Interrupted++
			for id := range cur {
				r.Held[id] = true
			}
			if len(cur) > 0 && curUntil.After(r.HeldUntil) {
				r.HeldUntil = curUntil
			}
		}
		cur, curUntil, open = map[string]bool{}, time.Time{}, false
	}
	// pending: ids sent with no outcome journalled yet; doubt: ids whose
	// earlier send has no known outcome (journalled uncertain, or sent by a
	// run that died before the outcome), uncertain until one is sent.
	pending, doubt := map[string]bool{}, map[string]bool{}
	later := func(s string) {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.After(curUntil) {
			curUntil = t
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	var pendingErr error
	for sc.Scan() {
		line++
		if pendingErr != nil {
			return Resume{}, pendingErr // a bad line that was not the last one
		}
		var ev Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			pendingErr = fmt.Errorf("journal %s line %d is not a journal event: %w", path, line, err)
			continue
		}
		if r.Lines++; line == 1 {
			r.First = ev.Event
		}
		switch ev.Event {
		case EvRun:
			endRun(false)
			open = true
			for id := range pending { // sent by a run that died before the outcome
				doubt[id] = true
			}
			clear(pending)
			if !slices.Contains(r.Sources, ev.Target) {
				r.Sources = append(r.Sources, ev.Target)
			}
		case EvHeld:
			for _, id := range ev.IDs {
				cur[id] = true
				delete(r.Held, id) // this run saw it: an earlier hold on it is over
			}
			later(ev.Until)
		case EvHoldUntil:
			later(ev.Until)
		case EvSend:
			for _, id := range ev.IDs {
				if !r.Moved[id] {
					r.Uncertain[id] = true
					pending[id] = true
				}
			}
		case EvUncertain:
			doubt[ev.ID] = true
		case EvSent, EvParked:
			r.Moved[ev.ID] = true
			delete(r.Uncertain, ev.ID)
			delete(pending, ev.ID)
			delete(doubt, ev.ID)
		case EvSkippedDuplicate:
			r.Moved[ev.ID] = true
			delete(r.Uncertain, ev.ID)
			delete(pending, ev.ID)
			delete(doubt, ev.ID)
			delete(cur, ev.ID)
			delete(r.Held, ev.ID)
		case EvDeleted:
			delete(cur, ev.ID)
			delete(r.Held, ev.ID)
		case EvSendFailed:
			// This send failed; an earlier one with no known outcome may
			// still have arrived, so such a message stays uncertain.
			delete(pending, ev.ID)
			if !doubt[ev.ID] {
				delete(r.Uncertain, ev.ID)
			}
		case EvHoldLost:
			delete(cur, ev.ID) // visible again, or another consumer's
		case EvSummary:
			endRun(true)
			r.LastFinished = true
		}
		if ev.Event == EvRun {
			r.LastFinished = false
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return Resume{}, fmt.Errorf("read journal %s: %w", path, err)
	}
	endRun(false)
	return r, nil
}
