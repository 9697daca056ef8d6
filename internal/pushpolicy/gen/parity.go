package gen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/deadletter/deadletter/internal/pushpolicy"
)

// The window and codes the parity corpus is built around. ParityCodes
// selects some codes of the table, one code that is not in it (4242), and
// leaves the others (and 5555, also not in the table) unselected.
var (
	ParityStart = time.Date(2025, 11, 14, 8, 30, 0, 0, time.UTC)
	ParityEnd   = time.Date(2025, 11, 14, 9, 0, 0, 0, time.UTC)
)

const ParityCodes = "1001,1004,2003,4242"

// ParityPriorities are the priorities the corpus uses: target queues
// ${base}P0 … ${base}P3 must exist.
var ParityPriorities = []int{0, 1, 2, 3}

// Case is one DLQ message body of the parity corpus with what it is made
// of, so that the expected decision can be worked out without the code
// under test (Expect).
type Case struct {
	Label string // what the case covers
	Body  string
	// Malformed is the reason of a body that no policy can make eligible;
	// "" for a well-formed FailedPushCommand described by the rest.
	Malformed pushpolicy.Reason
	Priority  int
	CreatedAt int64 // epoch ms
	HasCode   bool  // errorCode present (and a number)
	Code      int
	HasMeta   bool // errorCode or errorMessage present
}

// Expect is the decision the push-dlq processor must make for the case
// under an inclusive window [start, end] (epoch ms) and the codes (or all
// of them), written down from the operations guide rather than from the
// code: eligible with the priority of the target, or the reason why not.
func (c Case) Expect(all bool, codes []int, start, end int64) (eligible bool, priority int, reason pushpolicy.Reason) {
	switch {
	case c.Malformed != "":
		return false, 0, c.Malformed
	case !c.HasMeta && !all:
		return false, 0, pushpolicy.ReasonNoErrorMetadata
	case !c.HasCode && !all:
		return false, 0, pushpolicy.ReasonNoErrorCode
	case c.HasCode && !all && !slices.Contains(codes, c.Code):
		return false, 0, pushpolicy.ReasonCodeNotSelected
	case c.CreatedAt < start:
		return false, 0, pushpolicy.ReasonBeforeWindow
	case c.CreatedAt > end:
		return false, 0, pushpolicy.ReasonAfterWindow
	}
	return true, c.Priority, ""
}

// createdAt spells epoch milliseconds in one of the three forms.
func createdAt(ms int64, form int) string {
	switch form % 3 {
	case 1:
		return strconv.Quote(strconv.FormatInt(ms, 10)) // numeric string
	case 2:
		return strconv.Quote(time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")) // ISO-8601
	}
	return strconv.FormatInt(ms, 10) // epoch ms, a JSON number
}

// Parity returns at least n cases (n is raised to cover every fixed case):
// every code of the table and two codes that are not in it, at both window
// edges exactly and 1 ms outside each, inside and a day before, each in the
// three createdAt forms; priorities as numbers and numeric strings;
// messages without error metadata, with only an errorMessage or only an
// errorCode; every kind of malformed body; then a deterministic random mix
// of well-formed messages around the window.
func Parity(n int, seed uint64) []Case {
	start, end := ParityStart.UnixMilli(), ParityEnd.UnixMilli()
	var out []Case
	id := 0
	add := func(c Case, fields string) {
		id++
		c.Body = fmt.Sprintf(`{"action":"push","notificationId":"parity-%05d",%s,"payload":{"title":"t","badge":%d}}`, id, fields, id%9)
		out = append(out, c)
	}
	priority := func(p int) string {
		if p%2 == 1 {
			return strconv.Quote(strconv.Itoa(p)) // "1", "3": numeric strings
		}
		return strconv.Itoa(p)
	}
	well := func(label string, p int, ms int64, form int, hasCode bool, code int, hasMsg bool) {
		fields := fmt.Sprintf(`"priority":%s,"createdAt":%s`, priority(p), createdAt(ms, form))
		if hasCode {
			fields += fmt.Sprintf(`,"errorCode":%d`, code)
		}
		if hasMsg {
			fields += `,"errorMessage":"push failed"`
		}
		add(Case{Label: label, Priority: p, CreatedAt: ms, HasCode: hasCode, Code: code, HasMeta: hasCode || hasMsg}, fields)
	}
	edges := []struct {
		name string
		ms   int64
	}{
		{"start", start}, {"end", end}, {"start-1ms", start - 1}, {"end+1ms", end + 1},
		{"inside", start + 17*60*1000 + 123}, {"day-before", start - 24*3600*1000},
	}
	codes := []int{}
	for _, c := range pushpolicy.Codes {
		codes = append(codes, c.Code)
	}
	codes = append(codes, 4242, 5555)
	k := 0
	for _, code := range codes {
		for _, e := range edges {
			for form := range 3 {
				well(fmt.Sprintf("code %d at %s, form %d", code, e.name, form), ParityPriorities[k%len(ParityPriorities)], e.ms, form, true, code, true)
				k++
			}
		}
	}
	for _, e := range edges[:5] {
		for form := range 3 {
			well("no error metadata at "+e.name, k%4, e.ms, form, false, 0, false)
			well("errorMessage only at "+e.name, (k+1)%4, e.ms, form, false, 0, true)
			well("errorCode only (1004) at "+e.name, (k+2)%4, e.ms, form, true, 1004, false)
			k++
		}
	}
	// Other spellings that are still well formed.
	add(Case{Label: "ISO with an offset, at the start", Priority: 2, CreatedAt: start, HasCode: true, Code: 1004, HasMeta: true},
		`"priority":2,"createdAt":"2025-11-14T09:30:00+01:00","errorCode":1004,"errorMessage":"x"`)
	add(Case{Label: "ISO without milliseconds, at the end", Priority: 1, CreatedAt: end, HasCode: true, Code: 2003, HasMeta: true},
		`"priority":1,"createdAt":"2025-11-14T09:00:00Z","errorCode":2003,"errorMessage":"x"`)
	add(Case{Label: "errorCode null with a message", Priority: 0, CreatedAt: start + 1, HasMeta: true},
		`"priority":0,"createdAt":`+strconv.FormatInt(start+1, 10)+`,"errorCode":null,"errorMessage":"x"`)
	add(Case{Label: "duplicate key: the last priority wins", Priority: 3, CreatedAt: start + 2, HasCode: true, Code: 1004, HasMeta: true},
		`"priority":"x","priority":3,"createdAt":`+strconv.FormatInt(start+2, 10)+`,"errorCode":1004,"errorMessage":"x"`)

	in := strconv.FormatInt(start+60000, 10)
	for _, m := range []struct {
		reason pushpolicy.Reason
		fields string
	}{
		{pushpolicy.ReasonNoPriority, `"createdAt":` + in + `,"errorCode":1004,"errorMessage":"x"`},
		{pushpolicy.ReasonNoPriority, `"priority":null,"createdAt":` + in + `,"errorCode":1004`},
		{pushpolicy.ReasonBadPriority, `"priority":-1,"createdAt":` + in + `,"errorCode":1004`},
		{pushpolicy.ReasonBadPriority, `"priority":1.5,"createdAt":` + in + `,"errorCode":1004`},
		{pushpolicy.ReasonBadPriority, `"priority":"high","createdAt":` + in + `,"errorCode":1004`},
		{pushpolicy.ReasonBadPriority, `"priority":true,"createdAt":` + in + `,"errorCode":1004`},
		{pushpolicy.ReasonNoCreatedAt, `"priority":1,"errorCode":1004,"errorMessage":"x"`},
		{pushpolicy.ReasonNoCreatedAt, `"priority":1,"createdAt":null,"errorCode":1004`},
		{pushpolicy.ReasonBadCreatedAt, `"priority":1,"createdAt":"yesterday","errorCode":1004`},
		{pushpolicy.ReasonBadCreatedAt, `"priority":1,"createdAt":1763109060000.5,"errorCode":1004`},
		{pushpolicy.ReasonBadCreatedAt, `"priority":1,"createdAt":true,"errorCode":1004`},
		{pushpolicy.ReasonBadCreatedAt, `"priority":1,"createdAt":{"ms":1},"errorCode":1004`},
		{pushpolicy.ReasonBadErrorCode, `"priority":1,"createdAt":` + in + `,"errorCode":"1004","errorMessage":"x"`},
		{pushpolicy.ReasonBadErrorCode, `"priority":1,"createdAt":` + in + `,"errorCode":10.5`},
		{pushpolicy.ReasonBadErrorCode, `"priority":1,"createdAt":` + in + `,"errorCode":"abc"`},
	} {
		add(Case{Label: "malformed: " + string(m.reason), Malformed: m.reason}, m.fields)
	}
	for _, b := range []struct {
		reason pushpolicy.Reason
		body   string
	}{
		{pushpolicy.ReasonBodyNotJSON, `not json`},
		{pushpolicy.ReasonBodyNotJSON, `{"priority":1,"createdAt":` + in},
		{pushpolicy.ReasonBodyNotJSON, `{'priority':1}`},
		{pushpolicy.ReasonBodyNotObject, `[1,2,3]`},
		{pushpolicy.ReasonBodyNotObject, `"a string"`},
		{pushpolicy.ReasonBodyNotObject, `42`},
		{pushpolicy.ReasonBodyNotObject, `null`},
		{pushpolicy.ReasonNoPriority, `{}`},
	} {
		out = append(out, Case{Label: "malformed: " + string(b.reason), Malformed: b.reason, Body: b.body})
	}

	r := rand.New(rand.NewPCG(seed, seed^0x5bd1e995))
	for len(out) < n {
		code := codes[r.IntN(len(codes))]
		ms := start - 10*60*1000 + r.Int64N(end-start+20*60*1000)
		well("random", ParityPriorities[r.IntN(len(ParityPriorities))], ms, r.IntN(3), true, code, r.IntN(4) != 0)
	}
	return out
}
