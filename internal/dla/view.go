package dla

import (
	"encoding/base64"
	"time"
	"unicode/utf8"
)

// View is the stable machine-readable form of a Record: snake_case keys,
// RFC 3339 UTC times, null rather than a missing key. Scripts depend on it;
// add fields, never rename or remove them.
type View struct {
	Key string `json:"key"`
	// KeyBase64 is the key's bytes, when they are not UTF-8: a JSON string
	// cannot carry them (Key then holds U+FFFD in their place).
	KeyBase64       *string   `json:"key_base64"`
	Date            *string   `json:"date"`
	Generation      string    `json:"generation"`
	Layers          int       `json:"layers"`
	Size            int64     `json:"size"`
	MessageID       *string   `json:"message_id"`
	ExecutionArn    *string   `json:"execution_arn"`
	ExecutionName   *string   `json:"execution_name"`
	StateMachineArn *string   `json:"state_machine_arn"`
	Status          *string   `json:"status"`
	Time            *string   `json:"time"`
	CollectionID    *string   `json:"collection_id"`
	ProviderID      *string   `json:"provider_id"`
	Granules        []*string `json:"granules"`
	Error           *string   `json:"error"`
	ErrorClass      *string   `json:"error_class"`
	DerivedFields   []string  `json:"derived_fields"`
	Problems        []string  `json:"problems"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// View returns the record's stable JSON form.
func (r *Record) View() View {
	v := View{
		Key: r.Key, KeyBase64: KeyBase64(r.Key), Date: nullable(r.Date()), Generation: string(r.Generation), Layers: r.Depth, Size: r.Size,
		MessageID: nullable(r.MessageID), ExecutionArn: nullable(r.ExecutionArn), ExecutionName: nullable(r.ExecutionName()),
		StateMachineArn: nullable(r.StateMachineArn), Status: nullable(r.Status), Time: nullable(r.Time),
		CollectionID: nullable(r.CollectionID), ProviderID: nullable(r.ProviderID),
		DerivedFields: append([]string{}, r.Derived...), Problems: append([]string{}, r.Problems...),
	}
	if t, ok := r.EventTime(); ok {
		s := t.UTC().Format(time.RFC3339Nano)
		v.Time = &s
	}
	if r.HasError {
		v.Error = &r.Error
		v.ErrorClass = nullable(ErrorClass(r.Error))
	}
	if r.HasGranules {
		v.Granules = make([]*string, len(r.Granules))
		for i, g := range r.Granules {
			v.Granules[i] = nullable(g)
		}
	}
	return v
}

// KeyBase64 is key in base64 when it is not valid UTF-8 (so that JSON output
// can still name the object exactly), and nil otherwise.
func KeyBase64(key string) *string {
	if utf8.ValidString(key) {
		return nil
	}
	s := base64.StdEncoding.EncodeToString([]byte(key))
	return &s
}
