package trace

import "testing"

// A body's notification is the one its consumers read: JSON.parse (and
// pushpolicy.ParseCommand) keep the last of a key given twice, so a body
// with notificationId "A" then "B" is B's message, not A's (gjson.Get
// returns the first). A truncated body that names one is still listed
// under it.
func TestTraceNotificationOfReadsTheLastKeyAsJSONParse(t *testing.T) {
	for body, want := range map[string]string{
		`{"notificationId":"A","x":1,"notificationId":"B"}`: "B",
		`{"notificationId":"A"}`:                            "A",
		` {"notificationId":123} `:                          "123",
		`{"a":{"notificationId":"n-1"}}`:                    "",
		`{"notificationId":"n-1","priority":`:               "n-1",
		`[{"notificationId":"n-1"}]`:                        "",
		``:                                                  "",
	} {
		if got := NotificationOf(body); got != want {
			t.Errorf("NotificationOf(%s) = %q, want %q", body, got, want)
		}
	}
}
