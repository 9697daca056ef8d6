package dla

import (
	"path"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// DateLayout is the archive's date folder format.
const DateLayout = "2006-01-02"

// Area is a top-level folder of the archive.
type Area string

const (
	AreaSQS    Area = "sqs"        // <stack>/dead-letter-archive/sqs/
	AreaFailed Area = "failed-sqs" // <stack>/dead-letter-archive/failed-sqs/
)

// Layout is the key layout of one stack's archive.
type Layout struct{ Stack string }

// Root is "<stack>/dead-letter-archive/".
func (l Layout) Root() string {
	if l.Stack == "" {
		return "dead-letter-archive/"
	}
	return strings.TrimSuffix(l.Stack, "/") + "/dead-letter-archive/"
}

// AreaPrefix is "<stack>/dead-letter-archive/<area>/".
func (l Layout) AreaPrefix(a Area) string { return l.Root() + string(a) + "/" }

// AuditPrefix is "<stack>/dead-letter-archive/audit/": the audit records
// of the runs that changed the archive (internal/audit), inside the
// archive's root and outside sqs/ and failed-sqs/, so that neither
// Cumulus's recovery nor the Athena table sees them.
func (l Layout) AuditPrefix() string { return l.Root() + "audit/" }

// DatePrefix is "<stack>/dead-letter-archive/<area>/<date>/".
func (l Layout) DatePrefix(a Area, date string) string { return l.AreaPrefix(a) + date + "/" }

// FailedKey is where recovery moves an object that failed: the failed-sqs
// folder of the event date (today when the time is missing or invalid), with
// the original file name, as Cumulus's getDLAFailureKey + basename does.
func (l Layout) FailedKey(key, eventTime string, now time.Time) string {
	return l.DatePrefix(AreaFailed, DatePartition(eventTime, now)) + path.Base(key)
}

// KeyInfo is what a key says about itself.
type KeyInfo struct {
	Area     Area   // sqs or failed-sqs ("" when outside both)
	Date     string // the YYYY-MM-DD folder, "" for legacy keys
	Legacy   bool   // not inside a date folder (flat pre-v18.3 keys, sqs/YYYY/M/D/HH/...)
	Basename string
}

// ParseKey reads the area and date folder of a key under this layout.
func (l Layout) ParseKey(key string) KeyInfo {
	info := KeyInfo{Basename: path.Base(key)}
	rest, ok := strings.CutPrefix(key, l.Root())
	if !ok {
		info.Legacy = true
		return info
	}
	area, rest, _ := strings.Cut(rest, "/")
	info.Area = Area(area)
	folder, _, nested := strings.Cut(rest, "/")
	if nested && IsDate(folder) {
		info.Date = folder
	} else {
		info.Legacy = true
	}
	return info
}

// IsDate reports whether s is a valid YYYY-MM-DD date.
func IsDate(s string) bool {
	if len(s) != len(DateLayout) {
		return false
	}
	_, err := time.Parse(DateLayout, s)
	return err == nil
}

// eventTimeLayouts are the forms accepted for an event time. Cumulus uses
// moment.utc(time).isValid(); EventBridge always writes RFC 3339 with Z.
var eventTimeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", DateLayout}

// ParseEventTime parses an event time; ok is false when missing or invalid.
func ParseEventTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	for _, layout := range eventTimeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// DatePartition is the archive date of an event time: its UTC date, or now's
// UTC date when the time is missing or invalid (Cumulus's extractDateString).
func DatePartition(eventTime string, now time.Time) string {
	if d, ok := EventDate(eventTime); ok {
		return d
	}
	return now.UTC().Format(DateLayout)
}

// EventDate is the UTC date (YYYY-MM-DD) of an event time; ok is false when
// the time is missing, invalid, or falls outside the years 0000-9999 that a
// date folder can name.
func EventDate(eventTime string) (string, bool) {
	t, ok := ParseEventTime(eventTime)
	if !ok {
		return "", false
	}
	d := t.UTC().Format(DateLayout)
	return d, IsDate(d)
}

// ArchiveFileName is the file name Cumulus gives a new archive object: the
// execution name (last ':' or '/' token of the ARN, "unknown" without one),
// a dash, and a UUID. There is no extension.
func ArchiveFileName(executionArn, uuid string) string {
	name := lastToken(executionArn)
	if executionArn == "" || name == "" {
		name = "unknown"
	}
	return name + "-" + uuid
}

// cumulusTimeLayouts are more forms of a time that moment.utc reads (ISO
// 8601 with a space or an offset without a colon, a bare local time read
// as UTC, RFC 2822), beside eventTimeLayouts.
var cumulusTimeLayouts = []string{
	"2006-01-02T15:04:05.999999999Z0700", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z0700",
	"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02",
	time.RFC1123, time.RFC1123Z, "Mon, 2 Jan 2006 15:04:05 MST", "Mon, 2 Jan 2006 15:04:05 -0700",
	"2 Jan 2006 15:04:05 MST", "2 Jan 2006 15:04:05 -0700",
}

// CumulusFailureDate is the date folder Cumulus's recovery gives a failure
// from the "time" at the top of the object it parsed (getDLAFailureKey:
// moment.utc(time) when the time is truthy and valid, else the day it
// runs). certain is false when the time is one whose reading by moment
// this cannot vouch for (a form neither parser here knows, a boolean, an
// object): the caller must then not rely on the date.
func CumulusFailureDate(t gjson.Result, now time.Time) (date string, certain bool) {
	today := now.UTC().Format(DateLayout)
	switch t.Type {
	case gjson.Null, gjson.False:
		return today, true
	case gjson.Number: // epoch milliseconds
		if t.Num == 0 {
			return today, true
		}
		d := time.UnixMilli(int64(t.Num)).UTC().Format(DateLayout)
		return d, IsDate(d) && float64(int64(t.Num)) == t.Num
	case gjson.String:
		s := strings.TrimSpace(t.Str)
		if t.Str == "" {
			return today, true
		}
		if d, ok := EventDate(s); ok {
			return d, true
		}
		for _, layout := range cumulusTimeLayouts {
			if p, err := time.Parse(layout, s); err == nil {
				d := p.UTC().Format(DateLayout)
				return d, IsDate(d)
			}
		}
		return today, false
	}
	return today, false
}
