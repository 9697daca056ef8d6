package pushpolicy

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

const t0 = int64(1763109000000) // 2025-11-14T08:30:00Z

func TestParseCommand(t *testing.T) {
	cases := []struct {
		name, body string
		want       Command
	}{
		{"failed push, epoch ms", `{"action":"push","notificationId":"n1","priority":2,"createdAt":1763109000000,"errorCode":1004,"errorMessage":"boom"}`,
			Command{Action: "push", Priority: 2, HasPriority: true, CreatedAt: t0, CreatedAtForm: CreatedAtEpochMs, HasCreatedAt: true, ErrorCode: 1004, HasErrorCode: true, ErrorMessage: "boom", HasErrorMeta: true}},
		{"numeric string createdAt and priority", `{"action":"schedule","priority":"3","createdAt":"1763109000000","errorCode":2003}`,
			Command{Action: "schedule", Priority: 3, HasPriority: true, CreatedAt: t0, CreatedAtForm: CreatedAtNumericString, HasCreatedAt: true, ErrorCode: 2003, HasErrorCode: true, HasErrorMeta: true}},
		{"iso createdAt", `{"priority":1,"createdAt":"2025-11-14T08:30:00.000Z","errorCode":1001}`,
			Command{Priority: 1, HasPriority: true, CreatedAt: t0, CreatedAtForm: CreatedAtISO8601, HasCreatedAt: true, ErrorCode: 1001, HasErrorCode: true, HasErrorMeta: true}},
		{"iso with offset", `{"priority":1,"createdAt":"2025-11-14T09:30:00+01:00"}`,
			Command{Priority: 1, HasPriority: true, CreatedAt: t0, CreatedAtForm: CreatedAtISO8601, HasCreatedAt: true}},
		{"manual redrive: no error metadata", `{"action":"push","priority":0,"createdAt":1763109000000}`,
			Command{Action: "push", HasPriority: true, CreatedAt: t0, CreatedAtForm: CreatedAtEpochMs, HasCreatedAt: true}},
		{"message without code", `{"priority":0,"createdAt":1763109000000,"errorMessage":"x"}`,
			Command{HasPriority: true, CreatedAt: t0, CreatedAtForm: CreatedAtEpochMs, HasCreatedAt: true, ErrorMessage: "x", HasErrorMeta: true}},
		{"duplicate key: last wins", `{"priority":1,"priority":4,"createdAt":1763109000000}`,
			Command{Priority: 4, HasPriority: true, CreatedAt: t0, CreatedAtForm: CreatedAtEpochMs, HasCreatedAt: true}},
		{"not json", `not json at all`, Command{Problem: ReasonBodyNotJSON, Detail: "not json at all"}},
		{"empty", ``, Command{Problem: ReasonBodyNotJSON}},
		{"array", `[1,2]`, Command{Problem: ReasonBodyNotObject, Detail: "[1,2]"}},
		{"no priority", `{"createdAt":1763109000000,"errorCode":1004}`,
			Command{Problem: ReasonNoPriority, CreatedAt: t0, CreatedAtForm: CreatedAtEpochMs, HasCreatedAt: true, ErrorCode: 1004, HasErrorCode: true, HasErrorMeta: true}},
		{"null priority", `{"priority":null,"createdAt":1}`, Command{Problem: ReasonNoPriority, CreatedAt: 1, CreatedAtForm: CreatedAtEpochMs, HasCreatedAt: true}},
		{"fractional priority", `{"priority":1.5,"createdAt":1}`, Command{Problem: ReasonBadPriority, Detail: "1.5", CreatedAt: 1, CreatedAtForm: CreatedAtEpochMs, HasCreatedAt: true}},
		{"negative priority", `{"priority":-1,"createdAt":1}`, Command{Problem: ReasonBadPriority, Detail: "-1", CreatedAt: 1, CreatedAtForm: CreatedAtEpochMs, HasCreatedAt: true}},
		{"no createdAt", `{"priority":1,"errorCode":1004}`, Command{Problem: ReasonNoCreatedAt, Priority: 1, HasPriority: true, ErrorCode: 1004, HasErrorCode: true, HasErrorMeta: true}},
		{"bad createdAt", `{"priority":1,"createdAt":"yesterday"}`, Command{Problem: ReasonBadCreatedAt, Detail: `"yesterday"`, Priority: 1, HasPriority: true}},
		{"bad errorCode", `{"priority":1,"createdAt":1,"errorCode":"1004"}`, Command{Problem: ReasonBadErrorCode, Detail: `"1004"`, Priority: 1, HasPriority: true, CreatedAt: 1, CreatedAtForm: CreatedAtEpochMs, HasCreatedAt: true, HasErrorMeta: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ParseCommand(tc.body); got != tc.want {
				t.Errorf("ParseCommand(%s)\n got %+v\nwant %+v", tc.body, got, tc.want)
			}
		})
	}
}

func TestSnippetKeepsUTF8(t *testing.T) {
	got := snippet(strings.Repeat("é", 40))
	if !strings.HasSuffix(got, "…") || strings.ContainsRune(got, '\uFFFD') || len(got) > 64 {
		t.Fatalf("snippet = %q", got)
	}
}

func TestDecide(t *testing.T) {
	base := "https://sqs.us-east-1.amazonaws.com/123456789012/push-"
	list := Policy{Start: t0, End: t0 + 30*60*1000, Codes: []int{1004, 2003}}
	all := Policy{Start: t0, End: t0 + 30*60*1000, AllCodes: true}
	body := func(extra string) string {
		return `{"action":"push","priority":2,"createdAt":` + extra + `}`
	}
	cases := []struct {
		name   string
		body   string
		policy Policy
		want   Decision
	}{
		{"selected code inside window", body(`1763109000000,"errorCode":1004`), list, Decision{Eligible: true, Target: base + "P2"}},
		{"window start is inclusive", body(`1763109000000,"errorCode":2003`), list, Decision{Eligible: true, Target: base + "P2"}},
		{"window end is inclusive", body(`1763110800000,"errorCode":2003`), list, Decision{Eligible: true, Target: base + "P2"}},
		{"one ms before", body(`1763108999999,"errorCode":1004`), list, Decision{Reason: ReasonBeforeWindow}},
		{"one ms after", body(`1763110800001,"errorCode":1004`), list, Decision{Reason: ReasonAfterWindow}},
		{"code not selected", body(`1763109000000,"errorCode":1001`), list, Decision{Reason: ReasonCodeNotSelected}},
		{"wildcard takes any code", body(`1763109000000,"errorCode":1001`), all, Decision{Eligible: true, Target: base + "P2"}},
		{"no metadata needs wildcard", body(`1763109000000`), list, Decision{Reason: ReasonNoErrorMetadata}},
		{"no metadata under wildcard", body(`1763109000000`), all, Decision{Eligible: true, Target: base + "P2"}},
		{"message without code needs wildcard", body(`1763109000000,"errorMessage":"x"`), list, Decision{Reason: ReasonNoErrorCode}},
		{"wildcard still checks the window", body(`1763108999999`), all, Decision{Reason: ReasonBeforeWindow}},
		{"malformed never eligible", `{"priority":2}`, all, Decision{Reason: ReasonNoCreatedAt}},
		{"not json never eligible", `<xml/>`, all, Decision{Reason: ReasonBodyNotJSON}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(ParseCommand(tc.body), tc.policy, base); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseCodesAndWindow(t *testing.T) {
	if all, codes, err := ParseCodes(" 1004, 2003,1004 "); err != nil || all || len(codes) != 2 || codes[0] != 1004 || codes[1] != 2003 {
		t.Fatalf("ParseCodes list = %v %v %v", all, codes, err)
	}
	if all, _, err := ParseCodes("*"); err != nil || !all {
		t.Fatalf("ParseCodes * = %v %v", all, err)
	}
	for _, bad := range []string{"", "1004,", "PushFailed", "-1", "1004;2003"} {
		if _, _, err := ParseCodes(bad); err == nil {
			t.Errorf("ParseCodes(%q) accepted", bad)
		}
	}
	s, e, err := ParseWindow("2025-11-14T08:30:00Z/1763110800000")
	if err != nil || s != t0 || e != t0+1800000 {
		t.Fatalf("ParseWindow = %d %d %v", s, e, err)
	}
	for _, bad := range []string{"", "2025-11-14T08:30:00Z", "/2025-11-14T09:00:00Z", "2025-11-14T08:30:00Z/soon", "x/1"} {
		if _, _, err := ParseWindow(bad); err == nil {
			t.Errorf("ParseWindow(%q) accepted", bad)
		}
	}
}

func TestValidate(t *testing.T) {
	hour := int64(3600 * 1000)
	cases := []struct {
		name  string
		p     Policy
		wide  bool
		valid bool
	}{
		{"list, narrow", Policy{Start: t0, End: t0 + hour, Codes: []int{1004}}, false, true},
		{"list, a week", Policy{Start: t0, End: t0 + 168*hour, Codes: []int{1004}}, false, true},
		{"star, 24h exactly", Policy{Start: t0, End: t0 + 24*hour, AllCodes: true}, false, true},
		{"star, 24h and 1ms", Policy{Start: t0, End: t0 + 24*hour + 1, AllCodes: true}, false, false},
		{"star, wide allowed", Policy{Start: t0, End: t0 + 48*hour, AllCodes: true}, true, true},
		{"start equals end", Policy{Start: t0, End: t0, Codes: []int{1004}}, false, false},
		{"start after end", Policy{Start: t0 + 1, End: t0, Codes: []int{1004}}, true, false},
		{"no codes", Policy{Start: t0, End: t0 + hour}, false, false},
	}
	for _, tc := range cases {
		if err := tc.p.Validate(tc.wide); (err == nil) != tc.valid {
			t.Errorf("%s: Validate = %v, want valid=%v", tc.name, err, tc.valid)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	good := map[string]string{
		EnvDLQURL: "https://sqs/1/push-dlq", EnvBaseURL: "https://sqs/1/push-",
		EnvStartAt: "2025-11-14T08:30:00Z", EnvEndAt: "2025-11-14T09:00:00Z", EnvErrorCodes: "1004,2003",
	}
	env := func(over map[string]string) func(string) string {
		return func(k string) string {
			if v, ok := over[k]; ok {
				return v
			}
			return good[k]
		}
	}
	c, err := LoadConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Policy.Start != t0 || c.Policy.End != t0+1800000 || c.Policy.CodesString() != "1004,2003" || c.DLQURL != good[EnvDLQURL] {
		t.Fatalf("config = %+v", c)
	}
	for _, tc := range []struct {
		over map[string]string
		want string
	}{
		{map[string]string{EnvStartAt: "14/11/2025"}, `PROCESS_START_AT="14/11/2025"`},
		{map[string]string{EnvEndAt: ""}, `PROCESS_END_AT: not set`},
		{map[string]string{EnvErrorCodes: "1004,x"}, `PROCESS_ERROR_CODES="1004,x"`},
		{map[string]string{EnvDLQURL: " "}, `PUSH_DLQ_QUEUE_URL: not set`},
		{map[string]string{EnvStartAt: "2025-11-14T10:00:00Z"}, `PROCESS_START_AT="2025-11-14T10:00:00Z": must be before PROCESS_END_AT`},
	} {
		_, err := LoadConfig(env(tc.over))
		var ee *EnvError
		if err == nil || !errors.As(err, &ee) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadConfig(%v) = %v, want an EnvError containing %q", tc.over, err, tc.want)
		}
	}
}

func TestCodeTable(t *testing.T) {
	if CodeName(1004) != "PushFailed" || CodeName(9000) != "Unknown" || CodeName(42) != "" || len(Codes) != 7 {
		t.Fatal("code table")
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, s := range []string{`{"priority":1,"createdAt":"2025-11-14T08:30:00Z","errorCode":1004}`, `{"priority":"7","createdAt":"17"}`, `[]`, `x`, `{"priority":1e300}`} {
		f.Add(s)
	}
	p := Policy{Start: 0, End: 1 << 50, AllCodes: true}
	f.Fuzz(func(t *testing.T, body string) {
		c := ParseCommand(body)
		d := Decide(c, p, "b")
		if d.Eligible && (c.Problem != ReasonNone || !c.HasPriority || !c.HasCreatedAt) {
			t.Fatalf("eligible with a problem: %+v", c)
		}
		if !d.Eligible && d.Reason == ReasonNone {
			t.Fatalf("ineligible without a reason: %+v", c)
		}
	})
}

func TestCodesStarCannotBeCombined(t *testing.T) {
	for _, s := range []string{"*,1004", "1004, *", "*,*"} {
		_, _, err := ParseCodes(s)
		if err == nil || !strings.Contains(err.Error(), `"*" means all codes and cannot be combined`) {
			t.Errorf("ParseCodes(%q) = %v", s, err)
		}
	}
	if got := UnknownCodes([]int{1004, 99999, 2003, 7}); !slices.Equal(got, []int{99999, 7}) {
		t.Errorf("UnknownCodes = %v", got)
	}
}

// A date alone is midnight UTC at the start of that day, at both ends.
func TestDateOnlyWindowEnd(t *testing.T) {
	s, e, err := ParseWindow("2025-11-14/2025-11-15")
	if err != nil {
		t.Fatal(err)
	}
	if got := time.UnixMilli(e).UTC().Format(time.RFC3339Nano); got != "2025-11-15T00:00:00Z" || time.UnixMilli(s).UTC().Format(time.RFC3339) != "2025-11-14T00:00:00Z" {
		t.Errorf("window ends at %s", got)
	}
	if !IsDateOnly("2025-11-15") || IsDateOnly("2025-11-15T00:00:00Z") || IsDateOnly("1763164800000") {
		t.Error("IsDateOnly")
	}
}

// Issue 38 item 9: a window end of the right form naming no day is said to
// be no day, not to be in the wrong format.
func TestWindowNamesADayThatDoesNotExist(t *testing.T) {
	_, _, err := ParseWindow("2025-02-30/2025-03-01")
	if err == nil || !strings.Contains(err.Error(), "2025-02-30 is not a day (February 2025 has 28 days)") || strings.Contains(err.Error(), "ISO-8601") {
		t.Errorf("2025-02-30: %v", err)
	}
	if _, _, err := ParseWindow("2025-02-28T08:00:00Z/2025-03-01"); err != nil {
		t.Errorf("a real window: %v", err)
	}
}
