package cumulusdb

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

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

// LockArchive takes a session-level advisory lock for archive on a
// connection of its own, so that two recovers of one archive into one
// database never run at once (they would write the same rows and race to
// move the same objects). The lock ends with release, or with the session
// if the process dies. It does not wait: a held lock is ErrLocked.
func LockArchive(ctx context.Context, pool *pgxpool.Pool, archive string) (release func(), err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, Classify(err)
	}
	key := ArchiveLockKey(archive)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil {
		conn.Release()
		return nil, Classify(err)
	}
	if !ok {
		conn.Release()
		return nil, fmt.Errorf("%w (advisory lock %d): wait for it to finish, or stop it, then run again", ErrLocked, key)
	}
	return func() {
		// A failed unlock leaves the lock to the session: drop the
		// connection rather than return it to the pool holding the lock.
		if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, key); err != nil {
			conn.Conn().Close(context.Background())
		}
		conn.Release()
	}, nil
}
