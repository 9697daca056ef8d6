package dlacmd

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/archive"
	"github.com/deadletter/deadletter/internal/calendar"
	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/cli/output"
	"github.com/deadletter/deadletter/internal/cumulusdb"
	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/dla/gen"
)

// newCmdDev groups developer tools; hidden from help.
func newCmdDev(f *Factory) *cobra.Command {
	dev := &cobra.Command{Use: "dev", Short: "Developer tools", Hidden: true}
	dev.AddCommand(newCmdGenArchive(f), newCmdDBInit(f))
	return dev
}

func newCmdGenArchive(f *Factory) *cobra.Command {
	var (
		out, start     string
		opts           gen.Options
		concurrency    int
		noMalformed    bool
		requireEmptyTo = true
	)
	cmd := &cobra.Command{
		Use:   "gen-archive --out DIR|s3://BUCKET/STACK",
		Short: "Write a deterministic, realistic sample archive",
		Long: `Write generated archive objects (all generations, nested layers, string and
object detail, every status, MODIS-like granules, real error texts, a few
malformed objects) under STACK/dead-letter-archive/ in a directory or bucket.
The same --seed always writes the same bytes.`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := time.Parse(dla.DateLayout, start)
			if err != nil {
				if err := calendar.NotADay(start); err != nil && len(start) == len(dla.DateLayout) {
					return cmdutil.UsageErrorf("invalid --start: %v", err)
				}
				return cmdutil.UsageErrorf("invalid --start %q: want YYYY-MM-DD", start)
			}
			opts.Start = t
			if opts.Malformed > 1 {
				return cmdutil.UsageErrorf("invalid --malformed %v: want a share between 0 and 1", opts.Malformed)
			}
			if noMalformed || opts.Malformed <= 0 {
				opts.Malformed = -1
			}
			var store archive.Store
			if rest, ok := strings.CutPrefix(out, "s3://"); ok {
				bucket, stack, _ := strings.Cut(rest, "/")
				if stack != "" {
					opts.Stack = strings.Trim(stack, "/")
				}
				store, err = f.OpenStore(cmd.Context(), archive.Location{Bucket: bucket, Stack: opts.Stack})
			} else {
				if requireEmptyTo {
					if entries, _ := os.ReadDir(out); len(entries) > 0 {
						return cmdutil.UsageErrorf("--out %s is not empty", out)
					}
				}
				if err := os.MkdirAll(out, 0o755); err != nil {
					return err
				}
				store, err = archive.NewLocal(out)
			}
			if err != nil {
				return err
			}
			return writeGenerated(cmd.Context(), f, store, opts, concurrency)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory (created; must be empty) or s3://BUCKET/STACK")
	cmd.Flags().StringVar(&opts.Stack, "stack", "demo", "stack name (the folder above dead-letter-archive/)")
	cmd.Flags().IntVar(&opts.Count, "count", 80, "number of objects")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 1, "random seed")
	cmd.Flags().StringVar(&start, "start", "2024-03-01", "first event date")
	cmd.Flags().IntVar(&opts.Days, "days", 5, "days the events spread over")
	cmd.Flags().BoolVar(&noMalformed, "no-malformed", false, "write no malformed objects")
	cmd.Flags().Float64Var(&opts.Malformed, "malformed", 0.03, "share of malformed objects (truncated, body not JSON, empty)")
	cmd.Flags().BoolVar(&opts.Outage, "outage", false, "the archive a database outage leaves: DLA records only, 3 in 5 transient (Knex pool timeout), 1 fix-first (missing collection), 1 permanent")
	cmd.Flags().BoolVar(&opts.NoLargePayloads, "no-large-payloads", false, "leave out the large inline payloads 8% of messages carry (an archive of small objects)")
	cmd.Flags().IntVar(&opts.MinGranules, "min-granules", 0, "fewest granules per message (with --max-granules)")
	cmd.Flags().IntVar(&opts.MaxGranules, "max-granules", 0, "most granules per message (default: 0 to 10 by workflow)")
	cmd.Flags().IntVar(&concurrency, "concurrency", 16, "objects written at once")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func writeGenerated(ctx context.Context, f *Factory, store archive.Store, opts gen.Options, concurrency int) error {
	objs := make(chan gen.Object, concurrency)
	errs := make(chan error, concurrency)
	for range concurrency {
		go func() {
			var first error
			for o := range objs {
				if err := store.Put(ctx, o.Key, o.Body); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	kinds := map[string]int{}
	var size int64
	genErr := gen.Generate(opts, func(o gen.Object) error {
		kinds[o.Kind]++
		size += int64(len(o.Body))
		select {
		case objs <- o:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(objs)
	var putErr error
	for range concurrency {
		if err := <-errs; err != nil && putErr == nil {
			putErr = err
		}
	}
	if genErr != nil {
		return genErr
	}
	if putErr != nil {
		return putErr
	}
	fmt.Fprintf(f.IO.ErrOut, "wrote %s (%s) to %s under %s/: %s.\n", output.Plural(opts.Count, "object"), output.HumanBytes(size), store, opts.Stack, describeKinds(kinds))
	return nil
}

// generatedKinds are the generator's kinds of object, in the order the
// summary names them, as the words it names them with.
var generatedKinds = []struct{ kind, word string }{
	{"dla-record", "DLA record"},
	{"sqs-record", "raw SQS record"},
	{"cumulus-message", "bare Cumulus message"},
}

var malformedKinds = []struct{ kind, word string }{
	{"malformed-truncated", "truncated"},
	{"malformed-body", "body not JSON"},
	{"malformed-empty", "empty"},
}

// describeKinds is gen-archive's summary as a sentence: "42 DLA records,
// 3 raw SQS records, 3 bare Cumulus messages and 2 malformed objects (1
// body not JSON, 1 empty)". Kinds with no object are left out.
func describeKinds(kinds map[string]int) string {
	var parts []string
	for _, k := range generatedKinds {
		if n := kinds[k.kind]; n > 0 {
			parts = append(parts, output.Plural(n, k.word))
		}
	}
	malformed, how := 0, []string{}
	for _, k := range malformedKinds {
		if n := kinds[k.kind]; n > 0 {
			malformed += n
			how = append(how, fmt.Sprintf("%d %s", n, k.word))
		}
	}
	if malformed > 0 {
		parts = append(parts, output.Plural(malformed, "malformed object")+" ("+strings.Join(how, ", ")+")")
	}
	// A kind the generator gained since is named as it is, never dropped.
	var other []string
	for kind, n := range kinds {
		if !slices.ContainsFunc(append(generatedKinds, malformedKinds...), func(k struct{ kind, word string }) bool { return k.kind == kind }) {
			other = append(other, fmt.Sprintf("%d %s", n, kind))
		}
	}
	slices.Sort(other)
	parts = append(parts, other...)
	switch len(parts) {
	case 0:
		return "nothing"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// newCmdDBInit creates the Cumulus tables recover writes, of either schema
// generation, in a local database, and optionally seeds the reference rows.
func newCmdDBInit(f *Factory) *cobra.Command {
	var (
		dbURL, seedFile, cumulus string
		seedGenerated            bool
	)
	cmd := &cobra.Command{
		Use:   "db-init [--cumulus v21|v22] [--database-url URL] [--seed FILE]",
		Short: "Create the Cumulus v21 or v22 tables in a local database (tests, demos)",
		Long: `Create the tables 'dla recover' writes (collections, providers,
async_operations, executions, pdrs, granules, files, granules_executions) with
the keys, checks, foreign keys and triggers of Cumulus's own migrations, in a
database you created for testing.

--cumulus picks the schema: v21 (plain tables), or v22 (v22.3: executions
partitioned by quarter, one partition per quarter of this year and the next
plus the default one; granules and files in 8 hash partitions each; the guard
tables and triggers that keep arn, url, granule_id and bucket/key unique).
v22.0 (also v22.1) and v22.2 build those releases' guard tables and triggers.

With --seed, insert the collections, providers, async operations and parent
executions of a seed file (the shape of the fixtures' seed.json); on v22 a
collection's cmr_provider and metrics_provider default to CUMULUS.`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if dbURL == "" {
				dbURL = f.Getenv("DATABASE_URL")
			}
			schema, err := cumulusdb.ParseGeneration(cumulus)
			if err != nil {
				return cmdutil.UsageErrorf("--cumulus: %v", err)
			}
			cfg, err := cumulusdb.PoolConfig(dbURL, 2)
			if err != nil {
				return cmdutil.UsageErrorf("%v", err)
			}
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				return err
			}
			defer pool.Close()
			if err := cumulusdb.InitSchema(ctx, pool, schema, f.Now().UTC().Year()); err != nil {
				return fmt.Errorf("%s: %w", cumulusdb.Target(cfg), err)
			}
			if seedFile != "" || seedGenerated {
				b := gen.ReferenceSeed()
				if seedFile != "" {
					if b, err = os.ReadFile(seedFile); err != nil {
						return err
					}
				}
				seed, err := cumulusdb.ParseSeed(b)
				if err != nil {
					return err
				}
				if err := cumulusdb.ApplySeed(ctx, pool, seed, ""); err != nil {
					return err
				}
			}
			fmt.Fprintf(f.IO.ErrOut, "Cumulus %s tables ready in %s\n", schema, cumulusdb.Target(cfg))
			return nil
		},
	}
	cmd.Flags().StringVar(&dbURL, "database-url", "", "PostgreSQL connection string (default $DATABASE_URL, else the PG* variables)")
	cmd.Flags().StringVar(&cumulus, "cumulus", "v21", "schema generation: v21, v22 (the newest, v22.3), v22.0, v22.1, v22.2 or v22.3")
	cmd.Flags().StringVar(&seedFile, "seed", "", "seed file (JSON) to insert")
	cmd.Flags().BoolVar(&seedGenerated, "seed-generated", false, "insert the collections and providers of 'dev gen-archive' messages")
	cmd.MarkFlagsMutuallyExclusive("seed", "seed-generated")
	return cmd
}
