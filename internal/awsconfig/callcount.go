package awsconfig

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// CallCountsEnv names the file that, when set, receives the count of AWS
// requests the process made, one line per service and operation ("S3
// GetObject 3396"), written when the command ends. Each HTTP attempt
// counts, retries included. The benchmarks read it (scripts/bench-recover);
// it costs one map increment per request.
const CallCountsEnv = "DEADLETTER_AWS_CALL_COUNTS"

var calls struct {
	mu sync.Mutex
	n  map[string]int
}

// countCalls counts each HTTP attempt of an operation.
func countCalls(st *middleware.Stack) error {
	return st.Deserialize.Add(middleware.DeserializeMiddlewareFunc("deadletterCallCount",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			k := awsmiddleware.GetServiceID(ctx) + " " + awsmiddleware.GetOperationName(ctx)
			calls.mu.Lock()
			if calls.n == nil {
				calls.n = map[string]int{}
			}
			calls.n[k]++
			calls.mu.Unlock()
			return next.HandleDeserialize(ctx, in)
		}), middleware.After)
}

// CallCounts returns the lines WriteCallCounts writes: "<service>
// <operation> <count>", by count, largest first, then a total.
func CallCounts() string {
	calls.mu.Lock()
	defer calls.mu.Unlock()
	keys := make([]string, 0, len(calls.n))
	total := 0
	for k, n := range calls.n {
		keys = append(keys, k)
		total += n
	}
	sort.Slice(keys, func(i, j int) bool {
		if calls.n[keys[i]] != calls.n[keys[j]] {
			return calls.n[keys[i]] > calls.n[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d\n", k, calls.n[k])
	}
	fmt.Fprintf(&b, "total %d\n", total)
	return b.String()
}

// WriteCallCounts writes CallCounts to the file CallCountsEnv names, if it
// is set.
func WriteCallCounts() error {
	path := os.Getenv(CallCountsEnv)
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(CallCounts()), 0o644)
}
