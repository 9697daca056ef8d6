package awsconfig

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Service ids, as the SDK names them (and as AWS_ENDPOINT_URL_<ID> spells
// them in upper case, spaces as underscores).
const (
	ServiceS3             = "S3"
	ServiceSQS            = "SQS"
	ServiceSNS            = "SNS"
	ServiceSFN            = "SFN"
	ServiceAthena         = "Athena"
	ServiceLambda         = "Lambda"
	ServiceSecretsManager = "Secrets Manager"
)

// Endpoint is where the client of service this package builds from cfg
// and s sends its requests, read from the client itself, so that it is
// what the SDK will use: --endpoint-url, then the service's own
// AWS_ENDPOINT_URL_<SERVICE>, then AWS_ENDPOINT_URL, then the profile's
// endpoint_url (or its services section); AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
// leaves only the flag. url is "" for AWS's own endpoint; source names what
// set it: "--endpoint-url", the variable, or "profile NAME".
func Endpoint(cfg aws.Config, s Settings, service string) (url, source string) {
	var base *string
	switch service {
	case ServiceS3:
		base = S3(cfg, s).Options().BaseEndpoint
	case ServiceSQS:
		base = SQS(cfg, s).Options().BaseEndpoint
	case ServiceSNS:
		base = SNS(cfg, s).Options().BaseEndpoint
	case ServiceSFN:
		base = SFN(cfg, s).Options().BaseEndpoint
	case ServiceAthena:
		base = Athena(cfg, s).Options().BaseEndpoint
	case ServiceLambda:
		base = Lambda(cfg, s).Options().BaseEndpoint
	case ServiceSecretsManager:
		base = SecretsManager(cfg, s).Options().BaseEndpoint
	default:
		base = cfg.BaseEndpoint
		if s.EndpointURL != "" {
			base = &s.EndpointURL
		}
	}
	url = aws.ToString(base)
	switch {
	case url == "":
		return "", ""
	case s.EndpointURL != "" && url == s.EndpointURL:
		return url, "--endpoint-url"
	}
	if service != "" {
		if v := ServiceEndpointVar(service); os.Getenv(v) == url {
			return url, v
		}
	}
	if os.Getenv("AWS_ENDPOINT_URL") == url {
		return url, "AWS_ENDPOINT_URL"
	}
	return url, "profile " + profileName(s)
}

// ServiceEndpointVar is the service's own endpoint variable:
// AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_SECRETS_MANAGER.
func ServiceEndpointVar(service string) string {
	return "AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(service, " ", "_"))
}

func profileName(s Settings) string {
	if s.Profile != "" {
		return s.Profile
	}
	if p := os.Getenv("AWS_PROFILE"); p != "" {
		return p
	}
	return "default"
}

// Describe names the target for the identity banner (never a secret):
// the profile, the region, and the endpoint each of services will really
// use (Endpoint), its password hidden (RedactEndpoint), with what set it;
// "aws" when nothing overrides it. One endpoint shared by every service
// named is named once:
//
//	profile=default region=us-east-1 endpoint=http://127.0.0.1:4566 (AWS_ENDPOINT_URL_SQS)
//	profile=ops region=eu-west-1 endpoint=S3 http://127.0.0.1:9000 (--endpoint-url), SFN aws
//
// Without services, it names the endpoint every service without one of
// its own uses (--endpoint-url, AWS_ENDPOINT_URL, the profile's).
func Describe(cfg aws.Config, s Settings, services ...string) string {
	name := func(service string) string {
		endpoint, source := Endpoint(cfg, s, service)
		if endpoint == "" {
			return "aws"
		}
		return RedactEndpoint(endpoint) + " (" + source + ")"
	}
	endpoint := name("")
	if len(services) > 0 {
		endpoint = name(services[0])
		var each []string
		same := true
		for _, svc := range services {
			e := name(svc)
			same = same && e == endpoint
			each = append(each, svc+" "+e)
		}
		if !same {
			endpoint = strings.Join(each, ", ")
		}
	}
	return fmt.Sprintf("profile=%s region=%s endpoint=%s", profileName(s), cfg.Region, endpoint)
}

// RedactEndpoint is an endpoint as it may be shown: a password in it
// (http://user:pass@proxy:3128, as a proxy or a gateway may be given) is
// written xxxxx, as net/url does. A banner is read over a shoulder, pasted
// in a ticket and kept in a terminal's scrollback.
func RedactEndpoint(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil { // not a URL: hide whatever comes before an @
		if at := strings.LastIndexByte(endpoint, '@'); at >= 0 {
			scheme, _, found := strings.Cut(endpoint[:at], "://")
			if !found {
				return "xxxxx" + endpoint[at:]
			}
			return scheme + "://xxxxx" + endpoint[at:]
		}
		return endpoint
	}
	if u.User == nil {
		return endpoint
	}
	if _, ok := u.User.Password(); !ok {
		return endpoint
	}
	return u.Redacted()
}

// FlagScopeError is the refusal of a verb whose --endpoint-url does not
// cover one of the services it calls (pushdlq's covers SQS only): with the
// flag sending the other calls to a local endpoint and nothing of the
// service's own, that service's calls would go to AWS.
type FlagScopeError struct {
	Verb    string // "processor"
	Covers  string // what the flag covers: "SQS"
	Service string // the service left out: ServiceLambda
}

func (e *FlagScopeError) Error() string {
	return fmt.Sprintf("%s calls %s, and --endpoint-url covers %s only: set %s to reach %s at a local endpoint, or drop --endpoint-url",
		e.Verb, e.Service, e.Covers, ServiceEndpointVar(e.Service), e.Service)
}

// RequireOwnEndpoint is nil unless --endpoint-url is set (s.EndpointURL)
// and service, which the flag does not cover, has no endpoint of its own
// (AWS_ENDPOINT_URL_<SERVICE>, AWS_ENDPOINT_URL, the profile's): then its
// calls would go to AWS while the flag sends the others elsewhere, and it
// is a *FlagScopeError. It makes no network call: a verb calls it before
// its first request.
func RequireOwnEndpoint(cfg aws.Config, s Settings, verb, covers, service string) error {
	if s.EndpointURL == "" {
		return nil
	}
	own := s
	own.EndpointURL = ""
	if url, _ := Endpoint(cfg, own, service); url != "" {
		return nil
	}
	return &FlagScopeError{Verb: verb, Covers: covers, Service: service}
}
