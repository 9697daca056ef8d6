package dlarecover

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/gctune"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
)

// Options are one recover run, handed down once by its caller (dla
// recover): the archive and its selection, the database, how the run goes,
// and the callbacks through which it reports. Open, Plan and Run take
// everything else from here.
type Options struct {
	Store    archive.Store
	Location archive.Location // the archive: the lock's key, the bucket of `replace` payloads, its name in the plan
	// Scope is the selection (flags, or keys); the plan reads it, the run
	// takes the planned objects.
	Scope selection.Scope
	// IncludeUnreadable plans the unreadable objects a content filter
	// cannot tell about (PlanSelection).
	IncludeUnreadable bool

	// The database: DatabaseURL ("" reads the PG* variables) or DBSecret;
	// MaxPool connections at most (0: Concurrency + 2; a run that takes
	// the archive lock adds one for it).
	DatabaseURL, DBSecret string
	MaxPool               int
	// AWS returns the AWS configuration, called only when something needs
	// it (the secret, the reads, the notifier); Settings are its flags.
	AWS      func() (aws.Config, error)
	Settings awsconfig.Settings
	Offline  bool          // no Step Functions or S3 reads
	Topics   snspub.Topics // none: nothing is published

	DryRun, Keep, LeaveUnreadable bool
	Concurrency                   int // objects written at once
	Now                           func() time.Time

	// StopPlan, called with each result of the plan pass first, ends it
	// with its error (an AWS credentials error every other object would
	// hit too); nil: none.
	StopPlan func(selection.Result) error
	// PlanProgress is told how many objects were planned; Progress is
	// called after each object's result of the run is counted.
	PlanProgress func(n int)
	Progress     func(*Summary)
	// Acted is recoverRun.Acted: each object's outcome once final, for the
	// audit record.
	Acted func(Object)
	// Explain and Warnf are Run's.
	Explain func(error) string
	Warnf   func(format string, args ...any)
}

// gcPercent is recover's GOGC unless the environment sets one, and
// memoryLimit its soft memory limit (GOMEMLIMIT) with it.
const (
	gcPercent   = 300
	memoryLimit = 72 << 20
)

// Session is an open recover run: the database and the writer on it, the
// archive lock (none in a dry run), the plan's spool once planned, and the
// process's tuning, all given back by Close.
type Session struct {
	opts   Options
	path   *dbwrite.Path
	lock   *cumulusdb.ArchiveLock
	plan   *Plan
	undo   []func() // run by Close, last first
	topics bool     // topics were given
}

// Open opens a recover run: the garbage collector's tuning, the database
// (dbwrite.Open: an unknown or half-migrated schema, a read-only database
// or a role without the privileges stops here, before anything is read,
// moved or deleted; its errors are *dbwrite.Error, naming their stage)
// and, unless a dry run, the archive lock, before the plan: a second run
// is refused before it reads the archive, and no run plans on objects
// another run is moving. Close gives everything back.
func Open(ctx context.Context, o Options) (*Session, error) {
	s := &Session{opts: o, topics: !o.Topics.None()}
	if err := s.open(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Session) open(ctx context.Context) error {
	defer notePhase(&phases.open, time.Now())
	o := s.opts
	s.tuneGC()
	maxPool := o.MaxPool
	if maxPool == 0 {
		maxPool = o.Concurrency + 2
	}
	if !o.DryRun {
		maxPool++ // the archive lock holds a connection of its own for the run
	}
	// dbwrite.Open is the db-writer processor's setup too.
	path, err := dbwrite.Open(ctx, dbwrite.Config{
		DatabaseURL: o.DatabaseURL, DBSecret: o.DBSecret, MaxConns: maxPool,
		AWS: o.AWS, Settings: o.Settings, Offline: o.Offline,
		// `replace` payloads only from the archive's bucket (none for a local one).
		ReplaceBucket: o.Location.Bucket, Topics: o.Topics, Now: o.Now,
	})
	if err != nil {
		return err
	}
	s.path = path
	s.undo = append(s.undo, path.Close)
	if !o.DryRun {
		if s.lock, err = cumulusdb.LockArchive(ctx, path.Database.Pool, o.Location.Identity()); err != nil {
			return fmt.Errorf("%s into %s: %w", o.Location, path.Database.Target, err)
		}
		s.undo = append(s.undo, s.lock.Release)
	}
	return nil
}

// tuneGC sets recover's GOGC and soft memory limit, unless the environment
// names them; Close sets them back. The live heap is small and the garbage
// short-lived (each object's decoded layers and rows, the AWS SDK's
// requests: about 420 KB an object): collecting at four times the default
// target cuts the collections, a fifth of the CPU at 200, for more
// resident memory, still flat however many objects. The soft ceiling
// beside it (only with recover's own GOGC) makes the collector run as
// often as the default would once the heap nears it, so resident memory
// does not creep up over a long run; it follows the live heap (gctune), so
// a run that holds more is not collected back to back. At concurrency 32
// over S3 the ceiling is what binds: 72 MiB (from 48) took 9% less CPU an
// object (2.06-2.08 ms against 2.23-2.41) for 95 MB resident instead of
// 88 (docs/performance.md, "Issue 42"); GOGC=400 GOMEMLIMIT=96MiB in the
// environment takes 1.8-1.95 ms for 118 MB.
func (s *Session) tuneGC() {
	s.undo = append(s.undo, gctune.Tune(os.Getenv, gctune.Settings{GCPercent: gcPercent, MemoryLimit: memoryLimit,
		FollowEvery: 250 * time.Millisecond, LimitWithGC: true}))
}

// Close gives back what the session holds: the spool, the lock, the
// database, the tuning.
func (s *Session) Close() {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
	s.undo = nil
}

// Plan is the plan pass (PlanSelection): one pass over the selection,
// counting it and spooling what the run will take (the decoded objects).
func (s *Session) Plan(ctx context.Context) (*Plan, error) {
	o := s.opts
	db := s.path.Database
	plan := &Plan{ByDate: map[string]int{}, ByStatus: map[string]int{}, ByColl: map[string]int{},
		Database: db.Target, Schema: string(db.Generation), Archive: o.Location.String(), Area: string(o.Scope.Area)}
	var err error
	if plan.ObjectSpool, err = NewObjectSpool(); err != nil {
		return nil, err
	}
	s.undo = append(s.undo, func() { plan.ObjectSpool.Close() })
	s.plan = plan
	defer notePhase(&phases.plan, time.Now())
	if err := PlanSelection(ctx, o.Store, o.Scope, PlanReads(o.Concurrency), o.IncludeUnreadable, plan, o.StopPlan, o.PlanProgress); err != nil {
		return nil, err
	}
	return plan, nil
}

// Summary is the run's summary before any object is written: what the plan
// selected and left alone, the database, and whether it publishes.
func (s *Session) Summary() *Summary {
	sum := &Summary{Type: "summary", DryRun: s.opts.DryRun, Keep: s.opts.Keep,
		Database: s.path.Database.Target, Schema: string(s.path.Database.Generation),
		SNS: SNSSummary{Topics: s.topics, Published: s.topics && !s.opts.DryRun}}
	if s.plan != nil {
		sum.Selected, sum.LeftAlone = s.plan.Objects, s.plan.LeftAlone
	}
	return sum
}

// Run writes the planned objects (recoverRun.runScope), calling emit with each
// object's result in the selection's order, and returns the summary with
// recoverRun.runScope's error. Plan comes first.
func (s *Session) Run(ctx context.Context, emit func(Object) error) (*Summary, error) {
	o := s.opts
	if s.plan == nil {
		return nil, fmt.Errorf("dlarecover: Run before Plan")
	}
	db := s.path.Database
	sum := s.Summary()
	run := &recoverRun{Store: o.Store, Layout: o.Scope.Layout, DB: s.path.DB, Pool: db.Pool, Writer: s.path.Writer, Lock: s.lock,
		DryRun: o.DryRun, Keep: o.Keep, LeaveUnreadable: o.LeaveUnreadable, Concurrency: o.Concurrency,
		Now: o.Now, Sum: sum, Explain: o.Explain, Warnf: o.Warnf, Progress: o.Progress, Acted: o.Acted,
	}
	// The run takes what the plan spooled, not the selection again.
	scope := o.Scope
	scope.Keys = nil
	scope.Limit = 0
	run.Objects = s.plan.ObjectSpool
	if _, set := os.LookupEnv("GOMAXPROCS"); !set && run.Concurrency == 1 {
		// One writer waits on PostgreSQL for most of each message; its
		// feeder, the output and the deletes fill those waits. On one
		// processor the hand-offs between them and the wake-ups after each
		// round trip stay on one thread instead of waking another (a
		// quarter of dla's CPU went to the scheduler and its system calls).
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}
	err := run.runScope(ctx, scope, emit)
	return sum, err
}
