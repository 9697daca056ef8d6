package pushpolicy

import (
	"strings"

	"github.com/tidwall/gjson"
)

// ReasonHeldBack is an eligible message held back by the replay guard:
// its notification was replayed --max-replays times already (the audit
// records say so), and it stays in the DLQ as an ineligible message does.
const ReasonHeldBack Reason = "held_back"

func init() {
	reasonText[ReasonHeldBack] = "held back: replayed --max-replays times already"
}

// NotificationID is a DLQ body's notificationId ("" when it has none).
// A key given twice is read as JSON.parse and ParseCommand read it: the
// last one wins. A body that is not JSON is searched as gjson finds it, so
// that a truncated body naming the notification is still found.
func NotificationID(body string) string {
	trimmed := strings.TrimSpace(body)
	if !gjson.Valid(trimmed) {
		return gjson.Get(body, "notificationId").String()
	}
	id := ""
	gjson.Parse(trimmed).ForEach(func(k, v gjson.Result) bool {
		if k.Str == "notificationId" {
			id = v.String()
		}
		return true
	})
	return id
}
