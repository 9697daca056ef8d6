package pushdlqcmd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"

	"github.com/deadletter/deadletter/internal/cli/cmdutil"
	"github.com/deadletter/deadletter/internal/pushpolicy"
	"github.com/deadletter/deadletter/internal/pushpolicy/gen"
)

// queueCreator is what `dev seed` needs beyond the mover's API.
type queueCreator interface {
	CreateQueue(context.Context, *sqs.CreateQueueInput, ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
}

func newCmdDev(f *Factory) *cobra.Command {
	dev := &cobra.Command{Use: "dev", Short: "Tools for trying pushdlq on a local SQS (see the README)",
		Long: `Tools for local development, trying pushdlq out and benchmarks. 'dev seed' creates a
DLQ and priority queues on a local SQS (pass --endpoint-url or set
AWS_ENDPOINT_URL) and fills the DLQ with generated failed pushes.`,
		Example: `  pushdlq dev seed --endpoint-url http://localhost:4566 --queue-prefix demo- --count 500`}
	var prefix, start string
	var count, priorities int
	var seed uint64
	seedCmd := &cobra.Command{
		Use:   "seed --queue-prefix PREFIX --count N",
		Short: "Create PREFIXdlq and PREFIXP1..Pn on a (local) SQS and fill the DLQ with generated failed pushes",
		Args:  cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if prefix == "" || count < 0 {
				return cmdutil.UsageErrorf("--queue-prefix is required and --count must be 0 or more")
			}
			from, err := pushpolicy.ParseTime(start)
			if err != nil {
				return cmdutil.UsageErrorf("--start: %v", err)
			}
			ctx := cmd.Context()
			api, _, err := f.SQS(ctx)
			if err != nil {
				return err
			}
			creator, ok := api.(queueCreator)
			if !ok {
				return fmt.Errorf("this SQS client cannot create queues")
			}
			create := func(name string) (string, error) {
				out, err := creator.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
				if err != nil {
					return "", fmt.Errorf("create queue %s: %w", name, err)
				}
				return aws.ToString(out.QueueUrl), nil
			}
			dlq, err := create(prefix + "dlq")
			if err != nil {
				return err
			}
			for p := 1; p <= priorities; p++ {
				if _, err := create(prefix + "P" + strconv.Itoa(p)); err != nil {
					return err
				}
			}
			var batch []types.SendMessageBatchRequestEntry
			flush := func() error {
				if len(batch) == 0 {
					return nil
				}
				out, err := api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlq), Entries: batch})
				batch = batch[:0]
				if err != nil {
					return err
				}
				if len(out.Failed) > 0 {
					return fmt.Errorf("seed: %d entries refused: %s", len(out.Failed), aws.ToString(out.Failed[0].Message))
				}
				return nil
			}
			var sendErr error
			gen.Generate(gen.Options{Count: count, Seed: seed, Start: from, Priorities: priorities}, func(i int, body string) {
				if sendErr != nil {
					return
				}
				batch = append(batch, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i % 10)), MessageBody: aws.String(body),
					MessageAttributes: map[string]types.MessageAttributeValue{"source": {DataType: aws.String("String"), StringValue: aws.String("push")}}})
				if len(batch) == 10 {
					sendErr = flush()
				}
			})
			if sendErr == nil {
				sendErr = flush()
			}
			if sendErr != nil {
				return sendErr
			}
			fmt.Fprintf(f.IO.Out, "dlq=%s\nbase=%s\n", dlq, strings.TrimSuffix(dlq, "dlq"))
			return nil
		},
	}
	fl := seedCmd.Flags()
	fl.StringVar(&prefix, "queue-prefix", "", "queue name prefix")
	fl.IntVar(&count, "count", 1000, "messages to put on the DLQ")
	fl.IntVar(&priorities, "priorities", 3, "create priority queues P1..Pn")
	fl.Uint64Var(&seed, "seed", 1, "generator seed")
	fl.StringVar(&start, "start", "2025-11-14T08:30:00Z", "incident window start (createdAt values fall in the 30 minutes after it)")
	dev.AddCommand(seedCmd)
	return dev
}
