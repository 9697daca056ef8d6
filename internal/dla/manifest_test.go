package dla

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const seedDir = "../../testdata/cumulus-v21-seed3/archive"

type manifestEntry struct {
	Key       string   `json:"key"`
	StoredRaw bool     `json:"storedRaw"`
	Corrupt   bool     `json:"corrupt"`
	BodyKind  string   `json:"bodyKind"`
	Layers    int      `json:"layers"`
	Tags      []string `json:"tags"`
	Expected  *struct {
		MessageID       *string   `json:"messageId"`
		ExecutionArn    *string   `json:"executionArn"`
		StateMachineArn *string   `json:"stateMachineArn"`
		Status          *string   `json:"status"`
		Time            *string   `json:"time"`
		CollectionID    *string   `json:"collectionId"`
		ProviderID      *string   `json:"providerId"`
		Granules        []*string `json:"granules"`
		Error           *string   `json:"error"`
	} `json:"expected"`
}

func loadManifest(t testing.TB) []manifestEntry {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(seedDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Objects []manifestEntry `json:"objects"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m.Objects
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// TestCumulusSeedParity decodes the 150 objects Cumulus v21 wrote and checks
// every hoisted field against what Cumulus computed for it. The only allowed
// differences are better values where Cumulus left nulls on a string detail.
func TestCumulusSeedParity(t *testing.T) {
	entries := loadManifest(t)
	if len(entries) != 150 {
		t.Fatalf("manifest has %d objects, want 150", len(entries))
	}
	var identical, improved, unreadable int
	for _, e := range entries {
		t.Run(filepath.Base(e.Key), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(seedDir, e.Key))
			if err != nil {
				t.Fatal(err)
			}
			d, err := Decode(raw)
			switch {
			case e.Corrupt:
				if !IsDecodeError(err) {
					t.Fatalf("corrupt object decoded without error: %+v", d.Record)
				}
				unreadable++
				return
			case e.StoredRaw:
				// Cumulus could not hoist it (its body is not JSON) and stored
				// the SQS record verbatim: we must say why it cannot be decoded.
				if !IsDecodeError(err) || d.Generation != GenSQSRecord || d.MessageID == "" {
					t.Fatalf("stored-raw object: err=%v gen=%s msg=%q", err, d.Generation, d.MessageID)
				}
				unreadable++
				return
			case err != nil:
				t.Fatalf("decode: %v", err)
			}
			x := e.Expected
			if d.Generation != GenDLARecord {
				t.Errorf("generation = %s, want %s", d.Generation, GenDLARecord)
			}
			better := slices.Contains(e.Tags, "body-detail-string")
			check := func(field, got string, want *string) {
				t.Helper()
				if got == deref(want) {
					return
				}
				if better && want == nil && got != "" {
					return
				}
				t.Errorf("%s = %q, want %q", field, got, deref(want))
			}
			check("messageId", d.MessageID, x.MessageID)
			check("executionArn", d.ExecutionArn, x.ExecutionArn)
			check("stateMachineArn", d.StateMachineArn, x.StateMachineArn)
			check("status", d.Status, x.Status)
			check("time", d.Time, x.Time)
			check("collectionId", d.CollectionID, x.CollectionID)
			check("providerId", d.ProviderID, x.ProviderID)
			check("error", d.Error, x.Error)
			if x.Granules == nil {
				if d.HasGranules && !better {
					t.Errorf("granules = %q, want null", d.Granules)
				}
			} else {
				want := make([]string, len(x.Granules))
				for i, g := range x.Granules {
					want[i] = deref(g)
				}
				if !slices.Equal(d.Granules, want) {
					t.Errorf("granules = %q, want %q", d.Granules, want)
				}
			}
			if better {
				if d.ExecutionArn == "" || d.Status == "" || len(d.Derived) == 0 {
					t.Errorf("string detail not decoded: %+v", d.Record)
				}
				improved++
			} else if !t.Failed() {
				identical++
			}
		})
	}
	t.Logf("seed parity: %d identical, %d improved (string detail), %d unreadable, of %d", identical, improved, unreadable, len(entries))
	if identical+improved+unreadable != len(entries) {
		t.Errorf("only %d of %d objects accounted for", identical+improved+unreadable, len(entries))
	}
}
