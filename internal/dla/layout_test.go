package dla

import (
	"regexp"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestLayout(t *testing.T) {
	l := Layout{Stack: "demo"}
	now := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	cases := []struct {
		key  string
		want KeyInfo
	}{
		{"demo/dead-letter-archive/sqs/2024-03-21/exec-uuid", KeyInfo{Area: AreaSQS, Date: "2024-03-21", Basename: "exec-uuid"}},
		{"demo/dead-letter-archive/failed-sqs/2024-03-21/exec-uuid", KeyInfo{Area: AreaFailed, Date: "2024-03-21", Basename: "exec-uuid"}},
		{"demo/dead-letter-archive/sqs/exec-uuid.json", KeyInfo{Area: AreaSQS, Legacy: true, Basename: "exec-uuid.json"}},
		{"demo/dead-letter-archive/sqs/2024/3/21/10/name", KeyInfo{Area: AreaSQS, Legacy: true, Basename: "name"}},
		{"demo/dead-letter-archive/sqs/2024-13-01/x", KeyInfo{Area: AreaSQS, Legacy: true, Basename: "x"}},
	}
	for _, c := range cases {
		if got := l.ParseKey(c.key); got != c.want {
			t.Errorf("ParseKey(%q) = %+v, want %+v", c.key, got, c.want)
		}
	}
	if got := l.FailedKey("demo/dead-letter-archive/sqs/2024-03-21/exec-uuid", "2024-03-20T23:59:59-01:00", now); got != "demo/dead-letter-archive/failed-sqs/2024-03-21/exec-uuid" {
		t.Errorf("FailedKey = %q (the date is the event's UTC date)", got)
	}
	if got := l.FailedKey("demo/dead-letter-archive/sqs/x.json", "aTime", now); got != "demo/dead-letter-archive/failed-sqs/2026-11-21/x.json" {
		t.Errorf("FailedKey with an invalid time = %q, want today's folder", got)
	}
	if got := DatePartition("", now); got != "2026-11-21" {
		t.Errorf("DatePartition(\"\") = %q", got)
	}
	if got := ArchiveFileName("arn:aws:states:us-east-1:1:execution:sm:exec-9", "u"); got != "exec-9-u" {
		t.Errorf("ArchiveFileName = %q", got)
	}
	if got := ArchiveFileName("", "u"); got != "unknown-u" {
		t.Errorf("ArchiveFileName without ARN = %q", got)
	}
}

func TestFilter(t *testing.T) {
	r := &Record{
		Partition: "2024-03-21", Status: "FAILED", CollectionID: "MOD09GQ___006",
		ExecutionArn:    "arn:aws:states:us-east-1:1:execution:demo-Ingest:exec-1",
		StateMachineArn: "arn:aws:states:us-east-1:1:stateMachine:demo-Ingest",
		Granules:        []string{"G1", ""}, Error: "UnmetRequirementsError: no parent", HasError: true,
	}
	cases := []struct {
		name string
		f    Filter
		want bool
	}{
		{"zero", Filter{}, true},
		{"granule", Filter{Granules: []string{"nope", "G1"}}, true},
		{"granule miss", Filter{Granules: []string{"G"}}, false},
		{"null granule never matches", Filter{Granules: []string{""}}, false},
		{"collection id", Filter{Collections: []string{"MOD09GQ___006"}}, true},
		{"collection name", Filter{Collections: []string{"MOD09GQ"}}, true},
		{"collection other version", Filter{Collections: []string{"MOD09GQ___061"}}, false},
		{"execution arn", Filter{Executions: []string{r.ExecutionArn}}, true},
		{"execution name", Filter{Executions: []string{"exec-1"}}, true},
		{"status any case", Filter{Statuses: []string{"failed"}}, true},
		{"status none", Filter{Statuses: []string{"none"}}, false},
		{"state machine name", Filter{StateMachines: []string{"demo-Ingest"}}, true},
		{"error regexp", Filter{Error: regexp.MustCompile(`^Unmet`)}, true},
		{"error regexp miss", Filter{Error: regexp.MustCompile(`Aggregate`)}, false},
		{"date in range", Filter{From: "2024-03-21", To: "2024-03-21"}, true},
		{"date before range", Filter{From: "2024-03-22"}, false},
		{"and", Filter{Granules: []string{"G1"}, Statuses: []string{"RUNNING"}}, false},
	}
	for _, c := range cases {
		if got := c.f.Match(r); got != c.want {
			t.Errorf("%s: Match = %v, want %v", c.name, got, c.want)
		}
	}
	if (&Filter{Statuses: []string{"none"}}).Match(&Record{}) != true {
		t.Error("status none should match a record without status")
	}
}

func TestPrefilter(t *testing.T) {
	raw := []byte(`{"body":"{\"detail\":{\"input\":\"{\\\"granuleId\\\":\\\"MOD.A1.h1\\\",\\\"name\\\":\\\"MOD09GQ\\\"}\"}}"}`)
	cases := []struct {
		name string
		f    Filter
		nil_ bool
		want bool
	}{
		{"no exact filter", Filter{Statuses: []string{"FAILED"}}, true, true},
		{"granule present at depth", Filter{Granules: []string{"MOD.A1.h1"}}, false, true},
		{"granule absent", Filter{Granules: []string{"MOD.A2.h1"}}, false, false},
		{"collection name of a derived id", Filter{Collections: []string{"MOD09GQ___006"}}, false, true},
		{"both groups needed", Filter{Granules: []string{"MOD.A1.h1"}, Executions: []string{"arn:x:execution:sm:zzz"}}, false, false},
		{"unsafe needle disables the field", Filter{Granules: []string{`a"b`}}, true, true},
	}
	for _, c := range cases {
		p := c.f.Prefilter()
		if (p == nil) != c.nil_ {
			t.Errorf("%s: prefilter nil = %v", c.name, p == nil)
			continue
		}
		if p != nil && p(raw) != c.want {
			t.Errorf("%s: prefilter = %v, want %v", c.name, p(raw), c.want)
		}
	}
}

// The date Cumulus's recovery gives a failure, from the top-level time as
// moment.utc reads it; a form it cannot vouch for is not certain.
func TestCumulusFailureDate(t *testing.T) {
	now := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		raw     string
		date    string
		certain bool
	}{
		{`null`, "2026-11-26", true},
		{`""`, "2026-11-26", true},
		{`0`, "2026-11-26", true},
		{`false`, "2026-11-26", true},
		{`"2023-07-01T12:00:00Z"`, "2023-07-01", true},
		{`1688212800000`, "2023-07-01", true},
		{`"2023-07-01 12:00:00"`, "2023-07-01", true},
		{`"2023-07-01T23:30:00-0200"`, "2023-07-02", true},
		{`" 2023-07-01T12:00:00Z"`, "2023-07-01", true},
		{`"Sat, 01 Jul 2023 12:00:00 GMT"`, "2023-07-01", true},
		{`"yesterday-ish"`, "2026-11-26", false},
		{`true`, "2026-11-26", false},
		{`{"a":1}`, "2026-11-26", false},
	} {
		d, ok := CumulusFailureDate(gjson.Parse(c.raw), now)
		if d != c.date || ok != c.certain {
			t.Errorf("%s: %s %v, want %s %v", c.raw, d, ok, c.date, c.certain)
		}
	}
}
