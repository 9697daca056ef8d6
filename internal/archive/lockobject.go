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
}

// LockedError: another run holds the lock.
type LockedError struct {
	Key    string
	Holder LockHolder
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("another %s holds the archive since %s (host %s, pid %d; lock %s): wait for it to end, or, if it is not running, run again with --break-lock",
		e.Holder.Command, e.Holder.Since.UTC().Format(time.RFC3339), e.Holder.Host, e.Holder.PID, e.Key)
}

// TakeLock writes the lock object key for command, taking over a stale
// one of this host, and returns the function that removes it (only while
// it is still this run's).
func TakeLock(ctx context.Context, s Store, key, command string) (release func(), err error) {
	host, _ := os.Hostname()
	me := LockHolder{Command: command, Host: host, PID: os.Getpid(), Since: time.Now().UTC()}
	body, err := json.Marshal(me)
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 3; attempt++ {
		err := s.PutNew(ctx, key, body, "")
		if err == nil {
			return func() { _ = DeleteIfUnchanged(context.WithoutCancel(ctx), s, key, body) }, nil
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
		bad := json.Unmarshal(held, &h) != nil
		// This process's own: left by an earlier run whose release failed,
		// or written by a PutNew whose reply was lost.
		ours := h.PID == me.PID
		if bad || h.Host != host || h.PID <= 0 || (alive(h.PID) && !ours) {
			return nil, &LockedError{Key: key, Holder: h}
		}
		// A process of this host that is gone (killed), or this one: the
		// lock is stale.
		if derr := DeleteIfUnchanged(ctx, s, key, held); derr != nil && !errors.Is(derr, ErrNotFound) {
			return nil, fmt.Errorf("removing the stale lock %s: %w", key, derr)
		}
	}
	return nil, fmt.Errorf("taking the lock %s: it keeps changing hands", key)
}

// BreakLock removes the lock object key, whoever holds it.
func BreakLock(ctx context.Context, s Store, key string) error {
	return s.Delete(ctx, key)
}
