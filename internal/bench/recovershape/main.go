// Command recovershape sets up the deployment shape of scripts/bench-recover
// (SHAPE=aws): the archive Cumulus v21's own writer wrote (the seed-3
// fixture) copied N times into S3, each copy with executions, granules and
// PDRs of its own, the Step Functions executions those copies name, and the
// three SNS notification topics, each with an SQS queue subscribed. The
// fixture's buckets (demo-internal, ...) are renamed bench-internal, ...,
// in the objects too, so the archive is s3://bench-internal/demo. It is
// built by that script only (not a release target).
//
//	recovershape gen    -seed3 DIR -copies N -executions FILE  (S3 from the AWS_* environment)
//	recovershape sfn    -executions FILE -addr HOST:PORT                 (serves until SIGTERM)
//	recovershape topics -prefix P                                        (prints the three *_sns_topic_arn=ARN lines)
//	recovershape purge  -prefix P                                        (empties the topics' subscribed queues)
//
// Copy 0 is the fixture as Cumulus wrote it; copy r > 0 renames every
// execution name, granule id and PDR name by appending "r<r>", in the
// objects, in their keys, in the S3 files (CMR and metadata) the messages
// name and in the executions' histories, so that each copy writes rows of
// its own, as a year of distinct failures would.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/tidwall/gjson"

	"github.com/deadletter/deadletter/internal/dla"
	"github.com/deadletter/deadletter/internal/localaws"
	"github.com/deadletter/deadletter/internal/recovery"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: recovershape gen|sfn|topics ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "sfn":
		err = serveSFN(os.Args[2:])
	case "topics":
		err = topics(os.Args[2:])
	case "purge":
		err = purge(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "recovershape:", err)
		os.Exit(1)
	}
}

func awsConfig(ctx context.Context) (aws.Config, error) {
	return config.LoadDefaultConfig(ctx)
}

// file is one object to put: a bucket, a key and its bytes.
type file struct {
	bucket, key string
	body        []byte
}

func gen(args []string) error {
	fl := flag.NewFlagSet("gen", flag.ExitOnError)
	seed3 := fl.String("seed3", "", "the seed-3 fixture directory (../shared/fixtures/cumulus-v21-seed3)")
	copies := fl.Int("copies", 12, "copies of the 150 objects")
	exOut := fl.String("executions", "", "where to write the executions of every copy (sfn.json)")
	_ = fl.Parse(args)
	if *seed3 == "" || *exOut == "" {
		return fmt.Errorf("gen needs -seed3 and -executions")
	}
	archiveDir := filepath.Join(*seed3, "archive")
	exs, err := localaws.ReadSFN(filepath.Join(archiveDir, "_fixtures", "sfn.json"))
	if err != nil {
		return err
	}
	// The archive objects and the names they hold.
	var objects []file
	names := map[string]bool{}
	root := filepath.Join(archiveDir, "demo")
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		objects = append(objects, file{bucket: "demo-internal", key: "demo/" + filepath.ToSlash(rel), body: b})
		dec, derr := dla.Decode(b)
		if derr != nil || dec == nil {
			return nil // an unreadable object is copied as it is
		}
		if i := strings.LastIndexByte(dec.ExecutionArn, ':'); i >= 0 {
			names[dec.ExecutionArn[i+1:]] = true
		}
		for _, g := range dec.Granules {
			names[g] = true
		}
		if p := gjson.Get(dec.Message, "payload.pdr.name").String(); p != "" {
			names[p] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, ex := range exs {
		names[ex.Name] = true
	}
	delete(names, "")
	// The S3 files the messages name (CMR and metadata files).
	var fixtures []file
	s3Root := filepath.Join(archiveDir, "_fixtures", "s3")
	err = filepath.WalkDir(s3Root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s3Root, path)
		bkt, key, _ := strings.Cut(filepath.ToSlash(rel), "/")
		fixtures = append(fixtures, file{bucket: bkt, key: key, body: b})
		return nil
	})
	if err != nil {
		return err
	}
	exJSON, err := json.Marshal(exs)
	if err != nil {
		return err
	}

	ctx := context.Background()
	cfg, err := awsConfig(ctx)
	if err != nil {
		return err
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	for _, b := range fixtureBuckets {
		_, _ = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)})
	}
	// What a run before left (written objects deleted, failed ones under
	// failed-sqs/) goes, so that each run starts from the same archive.
	if err := clear(ctx, client, fixtureBuckets["demo-internal"], "demo/"); err != nil {
		return err
	}

	all := map[string]localaws.SFNExecution{}
	var puts []file
	for r := range *copies {
		rename := renamer(names, r)
		for _, o := range objects {
			key := rename(o.key)
			if r > 0 && key == o.key {
				key += fmt.Sprintf("-r%d", r)
			}
			puts = append(puts, file{bucket: rename(o.bucket), key: key, body: []byte(rename(string(o.body)))})
		}
		for _, f := range fixtures {
			puts = append(puts, file{bucket: rename(f.bucket), key: rename(f.key), body: []byte(rename(string(f.body)))})
		}
		var copyExs map[string]localaws.SFNExecution
		if err := json.Unmarshal([]byte(rename(string(exJSON))), &copyExs); err != nil {
			return err
		}
		for arn, ex := range copyExs {
			all[arn] = ex
		}
	}
	if err := putAll(ctx, client, puts); err != nil {
		return err
	}
	out, err := json.Marshal(map[string]any{"executions": all})
	if err != nil {
		return err
	}
	if err := os.WriteFile(*exOut, out, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "recovershape: %d archive objects (%d copies of %d), %d files, %d executions\n",
		len(objects)**copies, *copies, len(objects), len(fixtures)**copies, len(all))
	return nil
}

// fixtureBuckets are the seed-3 fixture's buckets, and the names the bench
// gives them, so that it never touches the buckets the tests use.
var fixtureBuckets = map[string]string{
	"demo-internal": "bench-internal", "demo-private": "bench-private",
	"demo-protected": "bench-protected", "demo-public": "bench-public",
}

// renamer returns the function that renames copy r's names: each name
// gains "r<r>" (copy 0 keeps them), and each bucket is the bench's. Longer
// names are matched first, so a name that holds another is renamed once.
func renamer(names map[string]bool, r int) func(string) string {
	to := map[string]string{}
	for from, b := range fixtureBuckets {
		to[from] = b
	}
	if r > 0 {
		for n := range names {
			to[n] = fmt.Sprintf("%sr%d", n, r)
		}
	}
	list := make([]string, 0, len(to))
	for n := range to {
		list = append(list, n)
	}
	sort.Slice(list, func(i, j int) bool {
		return len(list[i]) > len(list[j]) || len(list[i]) == len(list[j]) && list[i] < list[j]
	})
	pairs := make([]string, 0, 2*len(list))
	for _, n := range list {
		pairs = append(pairs, n, to[n])
	}
	return strings.NewReplacer(pairs...).Replace
}

// clear deletes every object under prefix.
func clear(ctx context.Context, client *s3.Client, bucket, prefix string) error {
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("list s3://%s/%s: %w", bucket, prefix, err)
		}
		var ids []s3types.ObjectIdentifier
		for _, o := range page.Contents {
			ids = append(ids, s3types.ObjectIdentifier{Key: o.Key})
		}
		if len(ids) == 0 {
			continue
		}
		if _, err := client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}}); err != nil {
			return fmt.Errorf("clear s3://%s/%s: %w", bucket, prefix, err)
		}
	}
	return nil
}

func putAll(ctx context.Context, client *s3.Client, puts []file) error {
	work := make(chan file)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(f.key), Body: bytes.NewReader(f.body)}); err != nil {
					select {
					case errs <- fmt.Errorf("put s3://%s/%s: %w", f.bucket, f.key, err):
					default:
					}
				}
			}
		}()
	}
	for _, f := range puts {
		work <- f
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func serveSFN(args []string) error {
	fl := flag.NewFlagSet("sfn", flag.ExitOnError)
	exFile := fl.String("executions", "", "sfn.json written by gen")
	addr := fl.String("addr", "127.0.0.1:0", "listen address")
	_ = fl.Parse(args)
	exs, err := localaws.ReadSFN(*exFile)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("http://%s\n", ln.Addr())
	srv := &http.Server{Handler: localaws.NewSFNServer(exs)}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return err
	}
	return nil
}

// topicClients parses the -prefix flag of the topics and purge commands
// and builds their clients.
func topicClients(command string, args []string) (prefix string, snsc *sns.Client, sqsc *sqs.Client, err error) {
	fl := flag.NewFlagSet(command, flag.ExitOnError)
	p := fl.String("prefix", "bench", "topic and queue name prefix")
	_ = fl.Parse(args)
	cfg, err := awsConfig(context.Background())
	if err != nil {
		return "", nil, nil, err
	}
	return *p, sns.NewFromConfig(cfg), sqs.NewFromConfig(cfg), nil
}

func topics(args []string) error {
	prefix, snsc, sqsc, err := topicClients("topics", args)
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, topic := range recovery.Topics {
		name := prefix + "-" + string(topic)
		t, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
		if err != nil {
			return fmt.Errorf("create topic %s: %w", name, err)
		}
		q, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-sub")})
		if err != nil {
			return fmt.Errorf("create queue %s-sub: %w", name, err)
		}
		attrs, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			return err
		}
		if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: t.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(attrs.Attributes["QueueArn"])}); err != nil {
			return fmt.Errorf("subscribe %s: %w", name, err)
		}
		fmt.Printf("%s_sns_topic_arn=%s\n", topic, aws.ToString(t.TopicArn))
	}
	return nil
}

// purge empties the queues subscribed to the topics, so that what the runs
// before published does not pile up in fauxqs (which slows as they grow).
func purge(args []string) error {
	prefix, _, sqsc, err := topicClients("purge", args)
	if err != nil {
		return err
	}
	ctx := context.Background()
	for _, topic := range recovery.Topics {
		name := prefix + "-" + string(topic) + "-sub"
		q, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("queue %s: %w", name, err)
		}
		if _, err := sqsc.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: q.QueueUrl}); err != nil {
			return fmt.Errorf("purge %s: %w", name, err)
		}
	}
	return nil
}
