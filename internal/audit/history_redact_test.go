package audit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// A record that holds a secret (written by a version that missed its
// form) does not show it in a history line.
func TestAHistoryLineRedactsASecretItsRecordKept(t *testing.T) {
	r := Run{Started: Started{RunID: "r", Argv: []string{"dla", "recover", "--database-url", "postgres://h/db?sslpassword=HUNTER2"},
		Target: Target{API: "https://u:HUNTER2@api/dev"}},
		Finished: &Finished{Error: "connect postgres://u:HUNTER2@h/db: refused"},
		Items:    []Item{{Key: "k", Action: "failed", Error: "token=HUNTER2 refused"}}}
	b, err := json.Marshal(r.Line("here", true))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "HUNTER2") {
		t.Fatalf("the history line shows the secret: %s", b)
	}
}

// The note of an actor whose identity could not be had keeps no secret
// of the error (an endpoint URL with a user and password).
func TestAnActorsNoteKeepsNoSecretOfTheIdentitysError(t *testing.T) {
	a := WhoAmI(context.Background(), func(context.Context) (string, string, error) {
		return "", "", errors.New(`Post "https://ops:HUNTER2@sts.local/": dial tcp: connection refused`)
	}, nil)
	if strings.Contains(a.AWSNote, "HUNTER2") || !strings.Contains(a.AWSNote, "connection refused") {
		t.Fatalf("note %q", a.AWSNote)
	}
}
