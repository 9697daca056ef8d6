package triage

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/deadletter/deadletter/internal/dla"
)

// The errors Cumulus v21's own recovery gave each seed-3 object (the
// oracle): every one has a rule, none is unknown.
func TestEveryErrorOfCumulusRecoveryHasARule(t *testing.T) {
	b, err := os.ReadFile("../../testdata/cumulus-v21-seed3/recovery-oracle.json")
	if err != nil {
		t.Fatal(err)
	}
	var oracle struct {
		Objects []struct {
			Key, Result string
			Error       *string
		}
	}
	if err := json.Unmarshal(b, &oracle); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range oracle.Objects {
		if o.Error == nil || *o.Error == "" {
			continue
		}
		n++
		class := dla.ErrorClass(*o.Error)
		if r := ClassifyDLA(class); r.Class == Unknown {
			t.Errorf("%s (%s): no rule for %q", o.Key, o.Result, class)
		}
	}
	if n < 50 {
		t.Fatalf("only %d errors in the oracle", n)
	}
}

// Each class a rule gives, on texts as Cumulus and PostgreSQL write them.
func TestRulesClassifyTheTextsCumulusWrites(t *testing.T) {
	for text, want := range map[string]string{
		"KnexTimeoutError: Knex: Timeout acquiring a connection. The pool is probably full.":        "knex-timeout",
		"error: remaining connection slots are reserved for non-replication superuser connections":  "pg-connection-slots",
		"Error: connect ECONNREFUSED 10.0.0.1:5432":                                                 "connection",
		"Error: Connection terminated unexpectedly":                                                 "connection",
		"ThrottlingException: Rate exceeded":                                                        "throttled",
		"Error: Request failed with status code 503":                                                "server-error",
		"Error: Request failed with status code 404":                                                "unknown",
		"TypeError: Cannot destructure property 'startDate' of 'undefined' as it is undefined.":     "describe-execution",
		"UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL.": "unmet-requirements",
		"AggregateError: \n    RecordDoesNotExist: Record in providers with identifiers {\"name\":\"LANCE_NRT\"} does not exist.\n    at x (/var/task/index.js:1:1)": "record-does-not-exist",
		"Error: Provider reference is required for a PDR":                                                     "pdr-provider",
		"AggregateError: \n    Error: A granule already exists for granuleId: G.1.2 with collectionId: C___1": "granule-other-collection",
		"AggregateError: SchemaValidationError: The record has validation errors":                             "schema-validation",
		"CumulusMessageError: getMessageWorkflowStartTime on a message without a workflow_start_time":         "not-a-cumulus-message",
		"TypeError: Cannot read properties of undefined (reading 'workflow_start_time')":                      "not-a-cumulus-message",
		"SyntaxError: Unterminated string in JSON at position 4645":                                           "unreadable",
		"":             "unknown",
		"Error: oh no": "unknown",
	} {
		if got := ClassifyDLA(dla.ErrorClass(text)).ID; got != want {
			t.Errorf("%q: rule %s, want %s", text, got, want)
		}
	}
}

func TestPushCodesAsTheRunbookReadsThem(t *testing.T) {
	for _, c := range []struct {
		code  int
		late  bool
		class Class
	}{
		{1001, false, Transient}, {1004, false, Transient}, {3001, false, Transient}, {2002, false, Permanent},
		{2003, true, Transient}, {2003, false, Permanent}, {2001, false, Unknown}, {9000, false, Unknown},
		{NoCode, false, Unknown}, {-1, false, Unknown}, {4242, false, Unknown},
	} {
		if got := ClassifyPush(c.code, c.late).Class; got != c.class {
			t.Errorf("code %d (late %v): %s, want %s", c.code, c.late, got, c.class)
		}
	}
}

// docs/triage.md holds the rule table: every rule and every push code.
func TestDocsListEveryRule(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "triage.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, r := range append(DLARules, UnknownRule) {
		if !strings.Contains(doc, "| `"+r.ID+"` | "+string(r.Class)+" |") {
			t.Errorf("docs/triage.md has no row for rule %s (%s)", r.ID, r.Class)
		}
	}
	for _, r := range PushRules {
		code := strconv.Itoa(r.Code)
		if r.Code == NoCode {
			code = "none"
		}
		if !strings.Contains(doc, "| "+code+" |") {
			t.Errorf("docs/triage.md has no row for push code %s", code)
		}
	}
}

// Readiness is per message: a message is ready when every record it needs
// exists; a lookup is made once per record.
func TestReadinessCountsTheMessagesWhoseEveryNeedExists(t *testing.T) {
	tr := New()
	msg := func(key, errText, provider string) *dla.Decoded {
		return &dla.Decoded{Record: dla.Record{Key: key, Partition: "2024-03-01", Error: errText, HasError: true, ProviderID: provider}}
	}
	missing := `RecordDoesNotExist: Record in providers with identifiers {"name":"%s"} does not exist.`
	tr.Add(msg("a", strings.Replace(missing, "%s", "P1", 1), ""))
	tr.Add(msg("b", strings.Replace(missing, "%s", "P2", 1), ""))
	tr.Add(msg("c", strings.Replace(missing, "%s", "P2", 1), ""))
	tr.Add(msg("d", "Error: Provider reference is required for a PDR", ""))
	lookups := map[string]int{}
	err := tr.CheckReadiness(context.Background(), func(_ context.Context, n Need) (bool, error) {
		lookups[n.String()]++
		return n.Name == "P2", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range tr.Groups() {
		switch g.Rule.ID {
		case "record-does-not-exist":
			if g.Ready != 2 || len(g.Missing) != 1 || g.Verdict() != "fix first: provider P1; 2 of 3 ready now" || g.FixSteps() != "create provider P1" {
				t.Errorf("ready %d, missing %v, verdict %q, fix %q", g.Ready, g.Missing, g.Verdict(), g.FixSteps())
			}
		case "pdr-provider":
			if g.NoProvider != 1 || g.Verdict() != "never as it is: the messages name no provider" {
				t.Errorf("no provider: %d, %q", g.NoProvider, g.Verdict())
			}
		}
	}
	if lookups["provider P1"] != 1 || lookups["provider P2"] != 1 || len(lookups) != 2 {
		t.Errorf("lookups %v", lookups)
	}
}
