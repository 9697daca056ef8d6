// Package awsconfig builds AWS SDK configuration from the CLI's flags with
// the precedence operators expect: a flag beats the AWS_* environment, which
// beats the shared config files.
package awsconfig

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Settings are the AWS flags shared by every command.
type Settings struct {
	Profile     string
	Region      string
	EndpointURL string // overrides every service's endpoint
	Debug       bool   // log AWS requests and responses on stderr
	// Log is where the debug log goes (os.Stderr when nil).
	Log io.Writer
}

// IMDSTimeout bounds each call to the EC2 instance metadata service, the
// last link of the default credential chain. Off EC2 (a laptop, a network
// without a route to 169.254.169.254) the SDK's own retries took 8.9 s to
// give up; on EC2 the service answers in milliseconds.
const IMDSTimeout = 1500 * time.Millisecond

// boundedIMDS is the metadata client of the credential chain, with every
// call bounded by IMDSTimeout. The SDK client inside is built once the
// configuration is loaded (it reads the metadata endpoint settings from it).
type boundedIMDS struct{ client *imds.Client }

func (b *boundedIMDS) GetMetadata(ctx context.Context, in *imds.GetMetadataInput, opts ...func(*imds.Options)) (*imds.GetMetadataOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, IMDSTimeout)
	defer cancel()
	return b.client.GetMetadata(ctx, in, opts...)
}

// Load resolves the SDK configuration. It makes no network call.
func Load(ctx context.Context, s Settings) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if s.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(s.Profile))
	}
	if s.Region != "" {
		opts = append(opts, config.WithRegion(s.Region))
	}
	debug := s.Debug || os.Getenv("DEADLETTER_DEBUG") != ""
	if debug {
		opts = append(opts, config.WithClientLogMode(aws.LogRequest|aws.LogResponse|aws.LogRetries))
	}
	logOut := s.Log
	if logOut == nil {
		logOut = os.Stderr
	}
	opts = append(opts, config.WithLogger(sdkLogger(debug, logOut)))
	opts = append(opts, config.WithHTTPClient(HTTPClient()))
	metadata := &boundedIMDS{}
	opts = append(opts, config.WithEC2RoleCredentialOptions(func(o *ec2rolecreds.Options) { o.Client = metadata }))
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	metadata.client = imds.NewFromConfig(cfg)
	if os.Getenv(CallCountsEnv) != "" {
		cfg.APIOptions = append(cfg.APIOptions, countCalls)
	}
	if cfg.Credentials != nil {
		profile := s.Profile
		if profile == "" {
			profile = os.Getenv("AWS_PROFILE")
		}
		cfg.Credentials = aws.NewCredentialsCache(credentialsErrors{next: cfg.Credentials, profile: profile})
	}
	if cfg.Region == "" {
		if s.EndpointURL == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
			return aws.Config{}, fmt.Errorf("no AWS region: pass --region, set AWS_REGION, or set one in the profile")
		}
		cfg.Region = "us-east-1" // local emulators accept any region
	}
	return cfg, nil
}

// EndpointOverridden reports whether S3 requests go somewhere other than AWS.
func (s Settings) EndpointOverridden(service string) bool {
	if s.EndpointURL != "" {
		return true
	}
	if os.Getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") == "true" {
		return false
	}
	return os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_"+service) != ""
}

// S3 returns an S3 client; path-style addressing is used whenever the
// endpoint is overridden (local servers do not serve bucket subdomains).
func S3(cfg aws.Config, s Settings) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if s.EndpointURL != "" {
			o.BaseEndpoint = aws.String(s.EndpointURL)
		}
		if s.EndpointOverridden("S3") {
			o.UsePathStyle = true
		}
	})
}

// MaxIdleConnsPerHost keeps one idle connection per request a command can
// have in flight (dla's --concurrency reaches 64 and more; pushdlq's workers
// each hold several). The SDK's default keeps 10: above that, every finished
// request closed its connection and the next one dialled again.
const MaxIdleConnsPerHost = 256

// ReadBufferSize is each connection's read buffer. With net/http's 4 KiB,
// an archive object (8–16 KiB, the answer's head before it) took two or
// three read system calls; with 32 KiB it usually takes one. A search of
// 2,000 objects made 4,733 reads instead of 6,706 and 14,209 system calls
// instead of 17,399 (strace -f -c, docs/performance.md). SQS answers (a
// batch of ten 1 KB messages) fit in one read as well. It costs 32 KiB per
// open connection (at most MaxIdleConnsPerHost idle ones).
const ReadBufferSize = 32 << 10

// HTTPClient is the HTTP client every AWS client of the project uses.
func HTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = MaxIdleConnsPerHost
		t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
		t.ReadBufferSize = ReadBufferSize
	})
}
