package testsupport

import (
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/deadletter/deadletter/internal/localaws"
)

// SFNExecution is one execution the Step Functions fake knows
// (localaws.SFNExecution).
type SFNExecution = localaws.SFNExecution

// SFNServer is the Step Functions endpoint of localaws.
type SFNServer = localaws.SFNServer

// NewSFNServer serves executions (by ARN).
func NewSFNServer(executions map[string]SFNExecution) *SFNServer {
	return localaws.NewSFNServer(executions)
}

// ReadSFN reads the executions of a fixture's sfn.json.
func ReadSFN(path string) (map[string]SFNExecution, error) { return localaws.ReadSFN(path) }

// SFNFake is an SFNServer listening on a local port for one test.
type SFNFake struct {
	*SFNServer
	URL string
}

// NewSFNFake starts a fake serving executions (by ARN).
func NewSFNFake(t testing.TB, executions map[string]SFNExecution) *SFNFake {
	f := &SFNFake{SFNServer: NewSFNServer(executions)}
	srv := httptest.NewServer(f.SFNServer)
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Client returns an SDK client for the fake.
func (f *SFNFake) Client() *sfn.Client {
	return sfn.NewFromConfig(AWSConfig(), func(o *sfn.Options) { o.BaseEndpoint = aws.String(f.URL) })
}
