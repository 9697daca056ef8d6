package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// A lock object keeps two runs of one command off one archive, in the
// archive itself (S3 or a folder), as restic keeps a repository's: an
// object written only where none is (PutNew), holding who took it. A lock
// whose holder is a process of this host that no longer runs (killed) is
// stale, and taken over; one of another host is refused, naming it, until
// it is removed on purpose (BreakLock).

// LockHolder is what a lock object records.
type LockHolder struct {
	Command string    `json:"command"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
	// Until, when set, is when the lock lapses: a lease (TakeLease), which
	// any host may take over once it has passed, as a run that cannot
	// outlive a deadline (a Lambda's 15 minutes) takes it.
	Until *time.Time `json:"until,omitempty"`
}

// lapsed reports whether h is a lease whose time has passed.
func (h LockHolder) lapsed(now time.Time) bool { return h.Until != nil && now.After(*h.Until) }

// LockedError: another run holds the lock.
type LockedError struct {
	Key    string
	Holder LockHolder
	// Running: the holder is a process of this host that runs (the lock
	// is not broken for it).
	Running bool
	// Unreadable is the size of a lock object that names no holder (0: it
	// names one).
	Unreadable int
}

func (e *LockedError) Error() string {
	if e.Unreadable > 0 {
		return fmt.Sprintf("the lock object %s cannot be read as a lock (%d bytes, no holder named); if no other run is going, run again with --break-lock", e.Key, e.Unreadable)
	}
	if e.Holder.Until != nil {
		return fmt.Sprintf("another %s holds the archive since %s (host %s, pid %d; lock %s) until %s at the latest: wait for it to end",
			e.Holder.Command, e.Holder.Since.UTC().Format(time.RFC3339), e.Holder.Host, e.Holder.PID, e.Key, e.Holder.Until.UTC().Format(time.RFC3339))
	}
	if e.Running {
		return fmt.Sprintf("another %s holds the archive since %s and is running (this host, pid %d; lock %s): the lock is not broken; wait for it to end",
			e.Holder.Command, e.Holder.Since.UTC().Format(time.RFC3339), e.Holder.PID, e.Key)
	}
	return fmt.Sprintf("another %s holds the archive since %s (host %s, pid %d; lock %s): wait for it to end, or, if it is not running, run again with --break-lock",
		e.Holder.Command, e.Holder.Since.UTC().Format(time.RFC3339), e.Holder.Host, e.Holder.PID, e.Key)
}

// TakeLock writes the lock object key for command, taking over a stale
// one of this host, and returns the function that removes it (only while
// it is still this run's).
func TakeLock(ctx context.Context, s Store, key, command string) (release func(), err error) {
	return takeLock(ctx, s, key, command, time.Time{})
}

// TakeLease is TakeLock for a run that cannot outlive until (a Lambda's
// deadline, with a margin): its lock lapses then, and a later run of any
// host takes it over, where a lock without a lease of another host is
// refused until broken by hand. A lapsed lease of a run still going is
// the caller's to rule out: until must be past the run's own end.
func TakeLease(ctx context.Context, s Store, key, command string, until time.Time) (release func(), err error) {
	return takeLock(ctx, s, key, command, until)
}

func takeLock(ctx context.Context, s Store, key, command string, until time.Time) (release func(), err error) {
	host, _ := os.Hostname()
	me := LockHolder{Command: command, Host: host, PID: os.Getpid(), Since: time.Now().UTC()}
	if !until.IsZero() {
		u := until.UTC()
		me.Until = &u
	}
	body, err := json.Marshal(me)
	if err != nil {
		return nil, err
	}
	marker := key + ".takeover"
	for attempt := 0; attempt < 3; attempt++ {
		err := s.PutNew(ctx, key, body, "")
		if err == nil {
			// A run killed while taking over a stale lock, between
			// removing it and writing its own, leaves its marker and no
			// lock: nothing else would ever remove that marker.
			staleMarker(ctx, s, marker, host)
			return func() { _ = DeleteCheckedBody(context.WithoutCancel(ctx), s, key, body) }, nil
		}
		if !errors.Is(err, ErrExists) {
			return nil, fmt.Errorf("taking the lock %s: %w", key, err)
		}
		held, gerr := s.Get(ctx, key)
		if errors.Is(gerr, ErrNotFound) {
			continue // released meanwhile
		} else if gerr != nil {
			return nil, fmt.Errorf("reading the lock %s: %w", key, gerr)
		}
		var h LockHolder
		if json.Unmarshal(held, &h) != nil || h.Host == "" || h.PID <= 0 {
			return nil, &LockedError{Key: key, Unreadable: len(held)}
		}
		// This process's own: left by an earlier run whose release failed,
		// or written by a PutNew whose reply was lost.
		ours := h.PID == me.PID
		if !h.lapsed(time.Now()) && (h.Host != host || (alive(h.PID) && !ours)) {
			return nil, &LockedError{Key: key, Holder: h}
		}
		// A process of this host that is gone (killed), or this one: the
		// lock is stale. It is taken over under a marker only one run can
		// write, so that two runs taking it over at once cannot both end
		// up holding it (a local archive's delete is a read, a compare and
		// a delete: the second run's delete would remove the first run's
		// new lock).
		if perr := s.PutNew(ctx, marker, body, ""); errors.Is(perr, ErrExists) {
			if staleMarker(ctx, s, marker, host) {
				continue
			}
			return nil, &LockedError{Key: key, Holder: h}
		} else if perr != nil {
			return nil, fmt.Errorf("taking over the stale lock %s: %w", key, perr)
		}
		derr := DeleteCheckedBody(ctx, s, key, held)
		if derr == nil || errors.Is(derr, ErrNotFound) {
			derr = s.PutNew(ctx, key, body, "")
		}
		_ = DeleteCheckedBody(context.WithoutCancel(ctx), s, marker, body)
		switch {
		case derr == nil:
			return func() { _ = DeleteCheckedBody(context.WithoutCancel(ctx), s, key, body) }, nil
		case errors.Is(derr, ErrChanged), errors.Is(derr, ErrExists):
			continue // another run took it first: look again
		default:
			return nil, fmt.Errorf("taking over the stale lock %s: %w", key, derr)
		}
	}
	return nil, fmt.Errorf("taking the lock %s: it keeps changing hands", key)
}

// BreakLock removes the lock object key, unless its holder is a process
// of this host that still runs (that run is not over: waiting is the
// answer, not breaking).
func BreakLock(ctx context.Context, s Store, key string) error {
	held, err := s.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading the lock %s: %w", key, err)
	}
	host, _ := os.Hostname()
	var h LockHolder
	if json.Unmarshal(held, &h) == nil && h.Host == host && h.PID > 0 && h.PID != os.Getpid() && alive(h.PID) {
		return &LockedError{Key: key, Holder: h, Running: true}
	}
	return DeleteCheckedBody(ctx, s, key, held)
}

// staleMarker removes a takeover marker left by a process of this host that
// is gone (it died while taking over), and reports whether it did. A live
// holder's, this process's included, is not stale: that run is taking the
// lock over now.
func staleMarker(ctx context.Context, s Store, marker, host string) bool {
	b, err := s.Get(ctx, marker)
	if err != nil {
		return errors.Is(err, ErrNotFound)
	}
	var h LockHolder
	if json.Unmarshal(b, &h) != nil || h.PID <= 0 || !h.lapsed(time.Now()) && (h.Host != host || alive(h.PID)) {
		return false
	}
	return DeleteCheckedBody(ctx, s, marker, b) == nil
}
