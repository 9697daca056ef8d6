package cumulusdb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrLocked is returned by LockArchive when another run holds the lock.
var ErrLocked = errors.New("another dla recover holds this archive's lock in this database")

// ArchiveLockKey is the advisory lock key of an archive: a hash of its
// name (s3://bucket/stack, or the local stack folder).
func ArchiveLockKey(archive string) int64 {
	h := fnv.New64a()
	h.Write([]byte("dla recover\x00" + archive))
	return int64(h.Sum64())
}

// lockCheckEvery is how often the lock's session is checked, and
// lockPingTimeout how long its answer may take.
var (
	lockCheckEvery  = 100 * time.Millisecond
	lockPingTimeout = 500 * time.Millisecond
)

// ArchiveLock is a session-level advisory lock held on a connection of its
// own for the length of a run.
type ArchiveLock struct {
	pool *pgxpool.Pool
	key  int64
	lost chan struct{}
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	conn *pgxpool.Conn
	err  error
}

// LockArchive takes the advisory lock of archive, so that two recovers of
// one archive into one database never run at once (they would write the
// same rows and race to move the same objects). It does not wait: a held
// lock is ErrLocked. The lock lives as long as its session: should the
// session end (a restart, a failover, a dropped connection), the lock is
// taken again at once on a new connection; if another run got it first,
// Lost is closed and the caller must stop.
func LockArchive(ctx context.Context, pool *pgxpool.Pool, archive string) (*ArchiveLock, error) {
	l := &ArchiveLock{pool: pool, key: ArchiveLockKey(archive), lost: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	conn, err := l.take(ctx)
	if err != nil {
		return nil, err
	}
	l.conn = conn
	go l.watch(context.WithoutCancel(ctx))
	return l, nil
}

func (l *ArchiveLock) take(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return nil, Classify(err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, pgx.QueryExecModeExec, l.key).Scan(&ok); err != nil {
		conn.Release()
		return nil, Classify(err)
	}
	if !ok {
		conn.Release()
		return nil, fmt.Errorf("%w (advisory lock %d): wait for it to finish, or stop it, then run again", ErrLocked, l.key)
	}
	return conn, nil
}

// watch checks the lock's session and takes the lock again when it ended.
func (l *ArchiveLock) watch(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(lockCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		conn := l.conn
		l.mu.Unlock()
		// A session gone silent (no FIN, no RST) answers nothing: a ping
		// that does not come back in time counts as a lost session.
		pctx, cancel := context.WithTimeout(ctx, lockPingTimeout)
		err := conn.Ping(pctx)
		cancel()
		if err == nil {
			continue
		}
		// The session may only be slow: end it on the server, so that its
		// lock is freed for this run to take again (a role may end its own
		// sessions), then drop the connection rather than pool it.
		oldPID := conn.Conn().PgConn().PID()
		conn.Conn().Close(ctx)
		conn.Release()
		l.endSession(ctx, oldPID)
		again, err := l.take(ctx)
		for try := 0; err != nil && errors.Is(err, ErrLocked) && try < 10; try++ {
			time.Sleep(lockCheckEvery) // the ended session lets go of the lock
			again, err = l.take(ctx)
		}
		l.mu.Lock()
		l.conn = again
		if err != nil {
			l.err = fmt.Errorf("the archive's lock was lost with its database session and could not be taken again: %w", err)
		}
		l.mu.Unlock()
		if err != nil {
			close(l.lost)
			return
		}
	}
}

// endSession ends the server session pid, if it still runs, on a fresh
// connection (errors are ignored: a session already gone is the aim).
func (l *ArchiveLock) endSession(ctx context.Context, pid uint32) {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return
	}
	defer conn.Release()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, _ = conn.Exec(cctx, `SELECT pg_terminate_backend($1) WHERE EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)`, int32(pid))
}

// Lost is closed when the lock was lost for good; Err then says why.
func (l *ArchiveLock) Lost() <-chan struct{} { return l.lost }

// Err is why the lock was lost.
func (l *ArchiveLock) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Release gives the lock up.
func (l *ArchiveLock) Release() {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	conn := l.conn
	l.mu.Unlock()
	if conn == nil {
		return
	}
	// A failed unlock leaves the lock to the session: drop the connection
	// rather than return it to the pool holding the lock.
	if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, l.key); err != nil {
		conn.Conn().Close(context.Background())
	}
	conn.Release()
}
