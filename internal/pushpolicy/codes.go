// Package pushdlq is the pure core of the push-notification dead-letter
// queue: the FailedPushCommand a failed push leaves in the DLQ, the
// error-code table, the replay policy (an inclusive createdAt window and a
// list of codes, or all of them) and the decision the push-dlq processor
// makes for each message. The CLI and the processor both call it, so they
// can never disagree on what is eligible. No AWS SDK, no printing.
package pushpolicy

import "slices"

// Code is one PushErrorCode.
type Code struct {
	Code        int    `json:"code"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Codes is the PushErrorCode table, in code order.
var Codes = []Code{
	{1001, "PublishFailed", "SNS publish attempt to a device endpoint failed."},
	{1004, "PushFailed", "Aggregate push failure for a notification (one or more device publishes failed)."},
	{2001, "ProcessRecordFailed", "Generic fallback when a record fails without a specific classification."},
	{2002, "PushServiceNotSupported", "pushService was not APNS / GCM / GCM_BETA."},
	{2003, "NotificationNotFound", "Notification not found in DynamoDB for provided key."},
	{3001, "SqsSendFailed", "SQS infrastructure/dependency failure when sending a secondary message."},
	{9000, "Unknown", "Unknown / uncategorized fallback error."},
}

// CodeName names a code, or returns "" for a code not in the table.
func CodeName(code int) string {
	i := slices.IndexFunc(Codes, func(c Code) bool { return c.Code == code })
	if i < 0 {
		return ""
	}
	return Codes[i].Name
}

// UnknownCodes returns the codes that are not in the table, in order.
func UnknownCodes(codes []int) []int {
	var out []int
	for _, c := range codes {
		if CodeName(c) == "" {
			out = append(out, c)
		}
	}
	return out
}
