package recovery

import (
	"math"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// JavaScript value rules the port depends on.

// truthy is JavaScript truthiness of a JSON value.
func truthy(v gjson.Result) bool {
	switch v.Type {
	case gjson.String:
		return v.Str != ""
	case gjson.Number:
		return v.Num != 0 && !math.IsNaN(v.Num)
	case gjson.True:
		return true
	case gjson.JSON:
		return true
	}
	return false
}

// isNil is lodash isNil: absent or null.
func isNil(v gjson.Result) bool { return !v.Exists() || v.Type == gjson.Null }

// isInteger is Number.isInteger.
func isInteger(v gjson.Result) bool {
	return v.Type == gjson.Number && v.Num == math.Trunc(v.Num) && !math.IsInf(v.Num, 0)
}

// jsString is String(v) for the scalars Cumulus concatenates.
func jsString(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return v.Str
	case gjson.Number:
		return strconv.FormatFloat(v.Num, 'f', -1, 64)
	case gjson.True:
		return "true"
	case gjson.False:
		return "false"
	case gjson.Null:
		return "null"
	}
	if !v.Exists() {
		return "undefined"
	}
	return v.Raw
}

// isoMillis is Date.prototype.toISOString.
func isoMillis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// msTime is new Date(epochMillis).
func msTime(ms float64) time.Time {
	return time.UnixMilli(int64(math.Trunc(ms))).UTC()
}

// dateLayouts are the date-time shapes new Date(string) accepts in the
// metadata Cumulus reads (ISO 8601 with or without zone and fraction). A
// value without a zone is read as UTC, as in Lambda.
var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
	"2006-01",
	"2006",
}

// parseDate is new Date(value) for a JSON string or epoch-ms number.
func parseDate(v gjson.Result) (time.Time, bool) {
	switch v.Type {
	case gjson.Number:
		return msTime(v.Num), true
	case gjson.String:
		for _, l := range dateLayouts {
			if t, err := time.Parse(l, v.Str); err == nil {
				return t.UTC().Truncate(time.Millisecond), true
			}
		}
	}
	return time.Time{}, false
}
