package pushpolicy

import (
	"fmt"
	"strings"
)

// The push-dlq processor's environment variables.
const (
	EnvDLQURL     = "PUSH_DLQ_QUEUE_URL"
	EnvBaseURL    = "PUSH_QUEUE_BASE_URL"
	EnvStartAt    = "PROCESS_START_AT"
	EnvEndAt      = "PROCESS_END_AT"
	EnvErrorCodes = "PROCESS_ERROR_CODES"
)

// Config is the processor's configuration.
type Config struct {
	DLQURL  string
	BaseURL string
	Policy  Policy
}

// EnvError names the variable and the value that is wrong with it.
type EnvError struct {
	Name, Value string
	Err         error
}

func (e *EnvError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%s: %v", e.Name, e.Err)
	}
	return fmt.Sprintf("%s=%q: %v", e.Name, e.Value, e.Err)
}

func (e *EnvError) Unwrap() error { return e.Err }

// LoadConfig reads the processor's environment, in one place for the CLI
// (--from-env) and the processor. Every variable is required; the window
// bounds are ISO-8601 (epoch milliseconds are accepted too).
func LoadConfig(getenv func(string) string) (Config, error) {
	var c Config
	var err error
	get := func(name string) (string, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return "", &EnvError{Name: name, Err: fmt.Errorf("not set")}
		}
		return v, nil
	}
	if c.DLQURL, err = get(EnvDLQURL); err != nil {
		return Config{}, err
	}
	if c.BaseURL, err = get(EnvBaseURL); err != nil {
		return Config{}, err
	}
	for _, b := range []struct {
		name string
		dst  *int64
	}{{EnvStartAt, &c.Policy.Start}, {EnvEndAt, &c.Policy.End}} {
		v, err := get(b.name)
		if err != nil {
			return Config{}, err
		}
		if *b.dst, err = ParseInstant(v); err != nil {
			return Config{}, &EnvError{Name: b.name, Value: v, Err: err}
		}
	}
	v, err := get(EnvErrorCodes)
	if err != nil {
		return Config{}, err
	}
	if c.Policy.AllCodes, c.Policy.Codes, err = ParseCodes(v); err != nil {
		return Config{}, &EnvError{Name: EnvErrorCodes, Value: v, Err: err}
	}
	if c.Policy.Start >= c.Policy.End {
		return Config{}, &EnvError{Name: EnvStartAt, Value: getenv(EnvStartAt),
			Err: fmt.Errorf("must be before %s=%q", EnvEndAt, getenv(EnvEndAt))}
	}
	return c, nil
}

// ProcessVars is a policy as the processor's PROCESS_* variables: the
// window bounds as ISO-8601 UTC with milliseconds, and the codes.
func ProcessVars(p Policy) map[string]string {
	start, end := p.Window()
	const iso = "2006-01-02T15:04:05.000Z"
	return map[string]string{EnvStartAt: start.Format(iso), EnvEndAt: end.Format(iso), EnvErrorCodes: p.CodesString()}
}

// MatchNothing is the policy `pushdlq processor disarm --clear` leaves: a
// valid window (the processor refuses to start without one) of one
// millisecond at the epoch, which no real createdAt falls in, and one code.
var MatchNothing = Policy{Start: 0, End: 1, Codes: []int{0}}

// MergeVars returns current with updates applied: every other variable is
// kept as it is. Neither map is changed.
func MergeVars(current, updates map[string]string) map[string]string {
	out := make(map[string]string, len(current)+len(updates))
	for k, v := range current {
		out[k] = v
	}
	for k, v := range updates {
		out[k] = v
	}
	return out
}

// PolicyFromVars reads the PROCESS_* variables of a function's environment
// (the queue URLs are not needed); a missing or invalid one is an EnvError.
func PolicyFromVars(vars map[string]string) (Policy, error) {
	c, err := LoadConfig(func(k string) string {
		if k == EnvDLQURL || k == EnvBaseURL {
			return "-"
		}
		return vars[k]
	})
	return c.Policy, err
}
