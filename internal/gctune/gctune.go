// Package gctune is the one place the tools set Go's garbage collector
// for their work: a wider GOGC (their garbage is short-lived, their live
// heap small) and a soft memory limit beside it, each left alone when the
// environment names it (GOGC, GOMEMLIMIT), and an undo that sets them
// back. What each command sets, and why, is its caller's doc comment.
package gctune

import (
	"runtime/debug"
	"time"
)

// Settings are one command's tuning.
type Settings struct {
	// GCPercent is GOGC unless the environment sets it (0: left alone).
	GCPercent int
	// MemoryLimit is the soft memory limit unless the environment sets
	// GOMEMLIMIT (0: none); with FollowEvery it is the floor of a limit
	// that follows the live heap, read again every FollowEvery.
	MemoryLimit int64
	FollowEvery time.Duration
	// LimitWithGC sets the memory limit only when GCPercent is set too
	// (a GOGC of the environment's own then has no limit beside it).
	LimitWithGC bool
}

// Tune applies s, reading the environment with getenv, and returns what
// sets the collector back as it was.
func Tune(getenv func(string) string, s Settings) (undo func()) {
	var undos []func()
	gcOurs := false
	if s.GCPercent != 0 && getenv("GOGC") == "" {
		prev := debug.SetGCPercent(s.GCPercent)
		undos = append(undos, func() { debug.SetGCPercent(prev) })
		gcOurs = true
	}
	if s.MemoryLimit != 0 && getenv("GOMEMLIMIT") == "" && (gcOurs || !s.LimitWithGC) {
		prev := debug.SetMemoryLimit(-1)
		if s.FollowEvery > 0 {
			stop := followLiveHeap(s.MemoryLimit, s.FollowEvery)
			undos = append(undos, func() { stop(); debug.SetMemoryLimit(prev) })
		} else {
			debug.SetMemoryLimit(s.MemoryLimit)
			undos = append(undos, func() { debug.SetMemoryLimit(prev) })
		}
	}
	return func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
		undos = nil
	}
}
