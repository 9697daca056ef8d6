package autorecover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/selection"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/triage"
	"github.com/deadletter/deadletter/internal/workflow/dbwrite"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// Verb is the audit record's verb of a pass.
const Verb = "autorecover"

// Defaults of a pass's settings.
const (
	DefaultLookback    = 7    // days of sqs/ date folders
	DefaultProbe       = 5    // objects of each group probed
	DefaultMaxObjects  = 5000 // objects recovered in one pass
	DefaultMaxAttempts = 5    // recorded runs that tried an object before a person must look
	// DefaultMargin is how much time before the deadline a pass stops
	// taking new objects, so that those in flight, the record and the
	// notification finish inside it.
	DefaultMargin = 90 * time.Second
)

// Config is one pass: the archive, the database, the mode, the budgets,
// the record and the notification, handed in by `dla autorecover` or the
// Lambda.
type Config struct {
	Store    archive.Store
	Location archive.Location
	Layout   dla.Layout

	Mode   string // ModeReport (default) or ModeRecover
	DryRun bool   // stop after the probe: no record, no notification

	Lookback    int // days (0: DefaultLookback)
	Probe       int // objects probed per group (0: DefaultProbe)
	MaxObjects  int // objects recovered per pass (0: DefaultMaxObjects)
	MaxAttempts int // recorded tries of an object before a person looks (0: DefaultMaxAttempts; negative: no limit)
	Concurrency int // recover's (0: 8)
	// Deadline, when set, is when the pass must be over (the Lambda's);
	// Margin before it, no new object is taken (0: DefaultMargin).
	Deadline time.Time
	Margin   time.Duration

	// The database (DatabaseURL, or DBSecret), and the AWS configuration
	// the secret, Step Functions, S3 reads and Cumulus's topics use.
	DatabaseURL, DBSecret string
	AWS                   func() (aws.Config, error)
	Settings              awsconfig.Settings
	Offline               bool // no Step Functions or S3 reads (recover --offline)
	// Athena, when set, counts the lookback with Athena instead of
	// reading it (the archive must be in S3).
	Athena *Athena
	Topics snspub.Topics // Cumulus's record topics, published as recover does

	// Started is the record's common part (tool, version, argv, actor,
	// reason: the caller's); Database the target as the record names it.
	// NoAudit runs without a record, and so without a backoff carried
	// between passes.
	Started  audit.Started
	Database *audit.Database
	NoAudit  bool

	// Notify publishes a notification (nil: no topic); Topic names it
	// in the report.
	Notify func(ctx context.Context, n Notification) (messageID string, err error)
	Topic  string

	// Command is the command triage prints for a group (its words), for
	// the report and the notification; nil: none.
	Command func(g *triage.Group) []string

	// Confirm, when set, is asked before a recover-mode pass changes
	// anything, with the report so far (the groups it will recover); a
	// false answer or an error ends the pass there, with nothing changed.
	Confirm func(r *Report) (bool, error)

	Now     func() time.Time
	Explain func(error) string
	Warnf   func(format string, args ...any)
	// Stage is told each stage as it starts, for a status line or a log.
	Stage func(stage string)
	// Acted, when set, is told of each object's outcome once final (its
	// delete or move done), as dlarecover.Options.Acted.
	Acted func(dlarecover.Object)
}

func (c *Config) defaults() {
	if c.Mode == "" {
		c.Mode = ModeReport
	}
	if c.Lookback <= 0 {
		c.Lookback = DefaultLookback
	}
	if c.Probe <= 0 {
		c.Probe = DefaultProbe
	}
	if c.MaxObjects <= 0 {
		c.MaxObjects = DefaultMaxObjects
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 8
	}
	if c.Margin <= 0 {
		c.Margin = DefaultMargin
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Warnf == nil {
		c.Warnf = func(string, ...any) {}
	}
	if c.Stage == nil {
		c.Stage = func(string) {}
	}
	if c.Explain == nil {
		c.Explain = func(err error) string { return err.Error() }
	}
}

// LockKey is the lock object that keeps two passes off one archive.
func LockKey(l dla.Layout) string { return l.Root() + "locks/autorecover.json" }

// pass is one pass under way.
type pass struct {
	c     Config
	rep   *Report
	scope selection.Scope
	last  PassState
	state PassState
	// attempts counts the recorded tries of each key of the lookback.
	attempts map[string]int
	tri      *triage.Triage
	over     map[GroupKey]int // objects over MaxAttempts, by group
	// keys are the keys triage read of each group, in listing order, less
	// those over MaxAttempts, at most MaxObjects a group: what recover
	// then reads, instead of listing and reading the lookback again.
	keys map[GroupKey][]string
	// texts are the error texts Athena's triage counted in each group
	// (Config.Athena): what the query of keys asks for.
	texts   map[GroupKey]map[string]bool
	path    *dbwrite.Path // nil: the database could not be opened (dbErr)
	dbErr   error
	choices []Choice
	rec     *audit.Recorder
}

// ErrLocked wraps the refusal of a pass while another holds the archive.
var ErrLocked = errors.New("another autorecover pass holds the archive")

// Pass runs one pass (the package comment lists its steps) and returns its
// report. A pass that cannot start (the archive cannot be read, another
// pass holds it) returns an error and no report; once started, what goes
// wrong with one group is said in the report, and the error returned is
// the first that stopped the pass.
func Pass(ctx context.Context, c Config) (*Report, error) {
	if c.Athena != nil && c.Location.Bucket == "" {
		return nil, fmt.Errorf("triage with Athena needs an archive in S3, not %s", c.Location)
	}
	p := newPass(c)
	release, err := p.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	for _, step := range []struct {
		stage string
		do    func(context.Context) error
	}{
		{"reading earlier passes", p.readHistory}, // the backoff, the last notification, the tries of each object
		{"triage", p.triage},                      // the lookback's groups, and the objects over their tries
		{"database", p.openDatabase},              // readiness; the probe's and recover's database
		{"probe", p.probe},                        // choose the groups, and run recover's dry run on each one's sample
		{"confirm", p.confirm},                    // from a terminal, before anything changes
		{"record", p.begin},                       // the pass's audit record, before anything changes
		{"recover", p.recover},                    // each group whose probe writes, within the budgets
	} {
		p.c.Stage(step.stage)
		if err := step.do(ctx); err != nil {
			p.close()
			return p.finish(ctx, err)
		}
	}
	p.close()
	return p.finish(ctx, nil)
}

// newPass is a pass of c, before its first step: its report's header and
// the lookback's scope.
func newPass(c Config) *pass {
	c.defaults()
	now := c.Now().UTC()
	p := &pass{c: c, rep: &Report{Schema: ReportSchema, Mode: c.Mode, DryRun: c.DryRun, Archive: c.Location.String(),
		Engine: EngineLocal, StartedAt: now, Groups: []GroupReport{}}}
	p.rep.From = now.AddDate(0, 0, -(c.Lookback - 1)).Format("2006-01-02")
	p.rep.To = now.Format("2006-01-02")
	p.scope = selection.Scope{Layout: c.Layout, Area: dla.AreaSQS, Filter: dla.Filter{From: p.rep.From, To: p.rep.To}}
	if c.Athena != nil {
		p.rep.Engine = EngineAthena
	}
	return p
}

// lock takes the pass's lock object: a lease that lapses after the
// deadline (or in a day, from a terminal), so that a pass killed with its
// Lambda never stops the next ones for good.
func (p *pass) lock(ctx context.Context) (func(), error) {
	if p.c.DryRun {
		return func() {}, nil // a dry run changes nothing and records nothing
	}
	until := p.c.Now().Add(24 * time.Hour)
	if !p.c.Deadline.IsZero() {
		until = p.c.Deadline.Add(time.Minute)
	}
	release, err := archive.TakeLease(ctx, p.c.Store, LockKey(p.c.Layout), "dla autorecover", until)
	var le *archive.LockedError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%w: %v", ErrLocked, err)
	}
	return release, err
}

// readHistory reads the records of earlier passes and recovers: the last
// pass's state (its backoff and notification), and how many runs tried
// each object of the lookback.
func (p *pass) readHistory(ctx context.Context) error {
	if p.c.NoAudit {
		return nil
	}
	from := p.c.Now().UTC().AddDate(0, 0, -p.c.Lookback)
	runs, problems, err := audit.List(ctx, p.c.Store, p.c.Layout.AuditPrefix(), audit.Filter{From: from, Tool: "dla", Verbs: []string{Verb, "recover"}})
	if err != nil {
		return fmt.Errorf("reading the audit records of earlier passes: %w", err)
	}
	for _, pr := range problems {
		p.c.Warnf("audit: %s", pr)
	}
	for i := range runs { // newest first: the last finished pass's state
		r := &runs[i]
		if r.Verb == Verb && r.Finished != nil && len(r.Finished.State) > 0 {
			if err := json.Unmarshal(r.Finished.State, &p.last); err != nil || p.last.Schema != StateSchema {
				p.c.Warnf("audit: %s: the pass's state cannot be read (%v); passes start again without a backoff", r.Folder, err)
				p.last = PassState{}
				continue
			}
			break
		}
	}
	for i := range runs {
		if err := runs[i].LoadItems(ctx, p.c.Store); err != nil {
			p.c.Warnf("audit: %s: %v", runs[i].Folder, err)
		}
	}
	p.attempts = Attempts(runs)
	return nil
}

// triage reads every object of the lookback once and groups them as dla
// triage does; an object tried MaxAttempts times is counted to its group's
// OverAttempts. With Athena, one query counts them instead
// (triageAthena).
func (p *pass) triage(ctx context.Context) error {
	p.tri = triage.New()
	p.tri.ProbeSize = p.c.Probe
	p.over = map[GroupKey]int{}
	p.keys = map[GroupKey][]string{}
	if p.c.Athena != nil {
		if err := p.triageAthena(ctx); err != nil {
			return err // the rows read so far are no count of the lookback
		}
		p.rep.Objects = p.tri.Total
		return nil
	}
	_, err := selection.Run(ctx, p.c.Store, p.scope, 16, func(r selection.Result) error {
		if r.Unreadable() {
			p.tri.AddUnreadable(r.Entry.Key, p.c.Layout.ParseKey(r.Entry.Key).Date)
			return nil
		}
		p.tri.Add(r.Decoded)
		g := GroupKey{Class: dla.ErrorClass(r.Decoded.Error)}
		switch ks := p.keys[g]; {
		case p.overAttempts(r.Decoded.Key):
			p.over[g]++
		case len(ks) < p.c.MaxObjects:
			p.keys[g] = append(ks, r.Decoded.Key)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("triage of %s, %s..%s: %w", p.c.Location, p.rep.From, p.rep.To, err)
	}
	p.rep.Objects = p.tri.Total
	return nil
}

func (p *pass) overAttempts(key string) bool {
	return p.c.MaxAttempts > 0 && OverAttempts(p.attempts[key], p.c.MaxAttempts)
}

// openDatabase opens the database the probe and recover write through,
// and checks each fix-first group's records. A database that cannot be
// opened is no error of the pass: it is what an outage looks like; the
// groups it would probe wait.
func (p *pass) openDatabase(ctx context.Context) error {
	path, err := dbwrite.Open(ctx, dbwrite.Config{DatabaseURL: p.c.DatabaseURL, DBSecret: p.c.DBSecret, MaxConns: p.c.Concurrency + 3,
		AWS: p.c.AWS, Settings: p.c.Settings, Offline: true, ReplaceBucket: p.c.Location.Bucket, Now: p.c.Now})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		p.dbErr = err
		p.rep.Readiness = p.c.Explain(err)
		p.tri.NotCheckedBecause(p.rep.Readiness)
		return nil
	}
	p.path = path
	pool := path.Database.Pool
	if err := p.tri.CheckReadiness(ctx, func(ctx context.Context, n triage.Need) (bool, error) {
		if n.Kind == triage.KindGranule && n.CollectionCumulusID != "" {
			return cumulusdb.GranuleInCollection(ctx, pool, n.Name, n.CollectionCumulusID)
		}
		return cumulusdb.Exists(ctx, pool, n.Kind, n.Name)
	}); err != nil {
		if ctx.Err() != nil {
			return err
		}
		p.rep.Readiness = p.c.Explain(err)
		p.tri.NotCheckedBecause(p.rep.Readiness)
	}
	return nil
}

// ErrNotConfirmed ends a pass whose confirmation was refused.
var ErrNotConfirmed = errors.New("not confirmed: nothing changed")

// confirm asks Config.Confirm, when a recover-mode pass would recover a
// group.
func (p *pass) confirm(context.Context) error {
	if p.c.Confirm == nil || p.c.Mode != ModeRecover || p.c.DryRun {
		return nil
	}
	writes := false
	for _, g := range p.rep.Groups {
		writes = writes || g.Probe != nil && g.Probe.Outcome == ProbeWrites
	}
	if !writes {
		return nil
	}
	ok, err := p.c.Confirm(p.rep)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotConfirmed
	}
	return nil
}

func (p *pass) close() {
	if p.path != nil {
		p.path.Close()
		p.path = nil
	}
}
