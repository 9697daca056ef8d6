package testsupport

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// SecretsFake is an in-process Secrets Manager endpoint speaking the AWS
// JSON 1.1 protocol (X-Amz-Target dispatch, __type errors) for the real SDK
// client. It answers GetSecretValue for the secrets it holds (by name or
// ARN) and ResourceNotFoundException for the rest.
type SecretsFake struct {
	URL     string
	mu      sync.Mutex
	secrets map[string]string
	calls   int
}

// NewSecretsFake serves secrets (name or ARN → SecretString).
func NewSecretsFake(t testing.TB, secrets map[string]string) *SecretsFake {
	f := &SecretsFake{secrets: secrets}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Calls is the number of GetSecretValue calls answered.
func (f *SecretsFake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *SecretsFake) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if op := r.Header.Get("X-Amz-Target"); op != "secretsmanager.GetSecretValue" {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(AWSJSONError("UnknownOperationException", "the fake serves GetSecretValue only, not "+op)))
		return
	}
	var in struct {
		SecretID string `json:"SecretId"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	f.mu.Lock()
	f.calls++
	s, ok := f.secrets[in.SecretID]
	f.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(AWSJSONError("ResourceNotFoundException", "Secrets Manager can't find the specified secret.")))
		return
	}
	out, _ := json.Marshal(map[string]any{
		"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:" + in.SecretID, "Name": in.SecretID,
		"SecretString": s, "VersionId": "00000000-0000-0000-0000-000000000001", "VersionStages": []string{"AWSCURRENT"},
		"CreatedDate": 1.7e9,
	})
	_, _ = w.Write(out)
}
