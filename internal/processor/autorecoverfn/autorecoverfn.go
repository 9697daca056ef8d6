// Package autorecoverfn is the dla-autorecover Lambda: one pass of
// autorecover (internal/workflow/autorecover) per invocation, invoked by
// EventBridge Scheduler, its settings from the environment. See
// docs/autorecover.md.
package autorecoverfn

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/athenarun"
	"github.com/deadletter/deadletter/internal/athenasql"
	"github.com/deadletter/deadletter/internal/audit"
	"github.com/deadletter/deadletter/internal/awsconfig"
	"github.com/deadletter/deadletter/internal/buildinfo"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/processor/jsonlog"
	"github.com/deadletter/deadletter/internal/snspub"
	"github.com/deadletter/deadletter/internal/triage"
	"github.com/deadletter/deadletter/internal/workflow/autorecover"
	"github.com/deadletter/deadletter/internal/workflow/dlarecover"
)

// Environment variable names. The database's are Cumulus's, as
// sf-event-sqs-to-db-records reads them; the SNS record topics are
// Cumulus's three (execution_sns_topic_arn ...).
const (
	EnvArchive     = "DLA_ARCHIVE" // s3://BUCKET/STACK
	EnvDBSecret    = "databaseCredentialSecretArn"
	EnvDatabaseURL = "DATABASE_URL"
	EnvMode        = "AUTORECOVER_MODE" // report (default) or recover
	EnvLookback    = "AUTORECOVER_LOOKBACK_DAYS"
	EnvProbe       = "AUTORECOVER_PROBE"
	EnvMaxObjects  = "AUTORECOVER_MAX_OBJECTS"
	EnvMaxAttempts = "AUTORECOVER_MAX_ATTEMPTS"
	EnvConcurrency = "AUTORECOVER_CONCURRENCY"
	EnvTopic       = "AUTORECOVER_TOPIC_ARN"
	// The engine that counts the lookback: local (default; every object
	// read) or athena (one query over the stack's Glue table), with the
	// Glue and Athena names (default: Cumulus's, from the stack) and a
	// scan limit in bytes.
	EnvEngine          = "AUTORECOVER_ENGINE"
	EnvAthenaDatabase  = "AUTORECOVER_ATHENA_DATABASE"
	EnvAthenaTable     = "AUTORECOVER_ATHENA_TABLE"
	EnvAthenaWorkgroup = "AUTORECOVER_ATHENA_WORKGROUP"
	EnvMaxScanBytes    = "AUTORECOVER_MAX_SCAN_BYTES"
)

// Config is the function's environment.
type Config struct {
	Archive               archive.Location
	DBSecret, DatabaseURL string
	Mode                  string
	Lookback, Probe       int
	MaxObjects            int
	MaxAttempts           int
	Concurrency           int
	Topic                 string
	Topics                snspub.Topics
	// Athena, when set, is the engine's names (EnvEngine athena), and
	// MaxScanBytes its scan limit (0: none).
	Athena       *athenasql.Names
	MaxScanBytes int64
}

// EnvError names the variable that is wrong, and why.
type EnvError struct{ Name, Value, Problem string }

func (e *EnvError) Error() string { return fmt.Sprintf("%s=%q: %s", e.Name, e.Value, e.Problem) }

// LoadConfig reads the environment.
func LoadConfig(getenv func(string) string) (Config, error) {
	c := Config{DBSecret: getenv(EnvDBSecret), DatabaseURL: getenv(EnvDatabaseURL), Mode: getenv(EnvMode),
		Topic: getenv(EnvTopic), Topics: snspub.TopicsFromEnv(getenv), Concurrency: 8}
	if c.Mode == "" {
		c.Mode = autorecover.ModeReport
	}
	if c.Mode != autorecover.ModeReport && c.Mode != autorecover.ModeRecover {
		return c, &EnvError{EnvMode, c.Mode, "want report or recover"}
	}
	v := getenv(EnvArchive)
	loc, err := archive.ParseLocation(v)
	if err != nil || loc.Bucket == "" {
		return c, &EnvError{EnvArchive, v, "want the archive as s3://BUCKET/STACK"}
	}
	c.Archive = loc
	switch {
	case c.DBSecret == "" && c.DatabaseURL == "":
		return c, &EnvError{EnvDBSecret, "", "the database is not set: set " + EnvDBSecret + " (the Cumulus database secret) or " + EnvDatabaseURL}
	case c.DBSecret != "" && c.DatabaseURL != "":
		return c, &EnvError{EnvDatabaseURL, "(not shown)", "set " + EnvDBSecret + " or " + EnvDatabaseURL + ", not both"}
	}
	switch e := getenv(EnvEngine); e {
	case "", autorecover.EngineLocal:
	case autorecover.EngineAthena:
		n := athenasql.NamesFor(loc.Stack)
		n.Database = cmp.Or(getenv(EnvAthenaDatabase), n.Database)
		n.Table = cmp.Or(getenv(EnvAthenaTable), n.Table)
		n.Workgroup = cmp.Or(getenv(EnvAthenaWorkgroup), n.Workgroup)
		if _, err := athenasql.From(n); err != nil {
			return c, &EnvError{EnvAthenaTable, n.Database + "." + n.Table, err.Error()}
		}
		c.Athena = &n
		if v := getenv(EnvMaxScanBytes); v != "" {
			b, err := strconv.ParseInt(v, 10, 64)
			if err != nil || b < 1 {
				return c, &EnvError{EnvMaxScanBytes, v, "not a whole number of bytes"}
			}
			c.MaxScanBytes = b
		}
	default:
		return c, &EnvError{EnvEngine, e, "want local or athena"}
	}
	var te *snspub.TopicError
	if c.Topics.None() {
		// No record notifications: recover publishes nothing.
	} else if err := c.Topics.Validate(); errors.As(err, &te) {
		return c, &EnvError{te.EnvVar, te.Value, te.Problem}
	} else if err != nil {
		return c, err
	}
	for _, n := range []struct {
		name     string
		into     *int
		min, max int
	}{{EnvLookback, &c.Lookback, 1, 400}, {EnvProbe, &c.Probe, 1, 1000}, {EnvMaxObjects, &c.MaxObjects, 1, 10_000_000},
		{EnvMaxAttempts, &c.MaxAttempts, 0, 1000}, {EnvConcurrency, &c.Concurrency, 1, 256}} {
		s := getenv(n.name)
		if s == "" {
			continue
		}
		i, err := strconv.Atoi(s)
		if err != nil || i < n.min || i > n.max {
			return c, &EnvError{n.name, s, fmt.Sprintf("not a whole number from %d to %d", n.min, n.max)}
		}
		*n.into = i
		if n.name == EnvMaxAttempts && i == 0 {
			c.MaxAttempts = -1 // no limit
		}
	}
	return c, nil
}

// Handler runs one pass per invocation.
type Handler struct {
	Config   Config
	Store    archive.Store
	AWS      aws.Config
	Settings awsconfig.Settings
	Now      func() time.Time
	Log      io.Writer
}

// New builds the handler at cold start: the archive's S3 store and the
// AWS configuration.
func New(ctx context.Context, cfg Config, log io.Writer) (*Handler, error) {
	awsCfg, err := awsconfig.Load(ctx, awsconfig.Settings{})
	if err != nil {
		return nil, err
	}
	store := archive.NewS3(awsconfig.S3(awsCfg, awsconfig.Settings{}), cfg.Archive.Bucket)
	return &Handler{Config: cfg, Store: store, AWS: awsCfg, Now: time.Now, Log: log}, nil
}

// Handle is one invocation: a pass with the invocation's deadline, its
// report logged as one JSON line and returned.
func (h *Handler) Handle(ctx context.Context, _ json.RawMessage) (*autorecover.Report, error) {
	c := h.Config
	layout := dla.Layout{Stack: c.Archive.Stack}
	started := audit.Started{Tool: "dla", Version: buildinfo.String("dla-autorecover"), Verb: autorecover.Verb,
		Argv: []string{"dla-autorecover"}, Reason: "autorecover"}
	started.Actor = audit.WhoAmI(ctx, awsconfig.CallerIdentity(h.AWS, h.Settings), func(string) string { return "" })
	pc := autorecover.Config{Store: h.Store, Location: c.Archive, Layout: layout, Mode: c.Mode,
		Lookback: c.Lookback, Probe: c.Probe, MaxObjects: c.MaxObjects, MaxAttempts: c.MaxAttempts, Concurrency: c.Concurrency,
		DatabaseURL: c.DatabaseURL, DBSecret: c.DBSecret,
		AWS: func() (aws.Config, error) { return h.AWS, nil }, Settings: h.Settings, Topics: c.Topics,
		Started: started, Database: &audit.Database{},
		Command: func(g *triage.Group) []string { return recoverCommand(c.Archive.String(), g) },
		Now:     h.Now,
		Stage: func(stage string) {
			jsonlog.Line(h.Log, struct {
				Type  string `json:"type"`
				Stage string `json:"stage"`
			}{"stage", stage})
		},
		Acted: func(o dlarecover.Object) {
			jsonlog.Line(h.Log, struct {
				Type    string `json:"type"`
				Key     string `json:"key"`
				Result  string `json:"result"`
				Action  string `json:"action"`
				MovedTo string `json:"moved_to,omitempty"`
			}{"object", o.Key, string(o.Result), string(o.Action), o.MovedTo})
		},
		Warnf: func(format string, a ...any) {
			jsonlog.Line(h.Log, struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			}{"warning", fmt.Sprintf(format, a...)})
		},
	}
	if d, ok := ctx.Deadline(); ok {
		pc.Deadline = d
	}
	if n := c.Athena; n != nil {
		pc.Athena = &autorecover.Athena{Names: *n, Runner: &athenarun.Runner{Client: awsconfig.Athena(h.AWS, h.Settings),
			Workgroup: n.Workgroup, Database: n.Database, MaxScanBytes: c.MaxScanBytes}}
	}
	if c.Topic != "" {
		pc.Topic = c.Topic
		pc.Notify = autorecover.SNSNotifier(func(context.Context) (autorecover.Publisher, error) {
			return awsconfig.SNS(h.AWS, h.Settings), nil
		}, c.Topic)
	}
	rep, err := autorecover.Pass(ctx, pc)
	if rep != nil {
		jsonlog.Line(h.Log, rep)
	}
	return rep, err
}

// recoverCommand is the dla recover a person runs for g, as dla triage
// prints it.
func recoverCommand(archiveSpec string, g *triage.Group) []string {
	return append(append([]string{"dla", "recover", "--archive", archiveSpec}, triage.SelectArgs(g, false)...), "--dry-run")
}
