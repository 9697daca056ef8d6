package sqsmove

import (
	"encoding/json"
	"strconv"
	"time"
)

// appendEvent appends ev as one JSON object, stamped with t: the same
// bytes json.Marshal writes for an Event whose Time is t in RFC 3339 with
// nanoseconds (journalenc_test.go checks it), so every journal reader, and
// the builds before this one, read it as before. It is written by hand
// because a replay journals two or three events per message: the
// reflection of json.Marshal was most of the journal's CPU time.
func appendEvent(b []byte, t time.Time, ev *Event) ([]byte, error) {
	b = append(b, `{"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","event":`...)
	b = appendJSONString(b, ev.Event)
	if ev.Batch != 0 {
		b = append(b, `,"batch":`...)
		b = strconv.AppendInt(b, ev.Batch, 10)
	}
	b = appendField(b, `,"id":`, ev.ID)
	if len(ev.IDs) > 0 {
		b = append(b, `,"ids":[`...)
		for i, id := range ev.IDs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, id)
		}
		b = append(b, ']')
	}
	b = appendField(b, `,"target":`, ev.Target)
	b = appendField(b, `,"new_id":`, ev.NewID)
	b = appendField(b, `,"until":`, ev.Until)
	b = appendField(b, `,"error":`, ev.Error)
	if ev.Info != nil {
		info, err := json.Marshal(ev.Info)
		if err != nil {
			return b, err
		}
		b = append(b, `,"info":`...)
		b = append(b, info...)
	}
	return append(b, '}'), nil
}

// appendField appends an omitempty string field.
func appendField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendJSONString appends s as encoding/json writes it. Ids, queue URLs
// and timestamps are plain ASCII, copied as they are; anything else (a
// quote, a control character, <, >, &, non-ASCII) goes through
// json.Marshal, which escapes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
