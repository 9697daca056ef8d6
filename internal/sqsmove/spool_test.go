package sqsmove

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// A message comes back from the binary spool as it came back from the
// JSON lines the spool held before: the same fields, nil and empty maps
// kept apart, a present but empty string value kept, an empty binary
// value dropped (omitempty).
func TestSpoolRecordRoundTrip(t *testing.T) {
	s := func(v string) *string { return &v }
	msgs := []*Message{
		{MessageID: "0b6c4f0e-8d4a-4f4e-9a39-1c4f43f0c6a1", ReceiptHandle: "rh", Body: `{"a":"<b>\n"}`, MD5OfBody: "md5",
			MessageAttributes: map[string]Attribute{
				"source": {DataType: "String", StringValue: s("push")},
				"empty":  {DataType: "String", StringValue: s("")},
				"bin":    {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 255}},
				"nobin":  {DataType: "Binary", BinaryValue: []byte{}},
			},
			Attributes: map[string]string{"SentTimestamp": "1700000000000", "MessageGroupId": "g"}},
		{MessageID: "x", Body: strings.Repeat("é", 70000)},
		{MessageID: "y", MessageAttributes: map[string]Attribute{}, Attributes: map[string]string{}},
	}
	var spool []byte
	for i, m := range msgs {
		spool = appendSpoolRecord(spool, int32(i*1000), m)
	}
	r := spoolReader{r: bufio.NewReader(bytes.NewReader(spool))}
	for i, m := range msgs {
		ord, got, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(m)
		var want Message
		if err := json.Unmarshal(js, &want); err != nil {
			t.Fatal(err)
		}
		if ord != int32(i*1000) || !reflect.DeepEqual(*got, want) {
			t.Errorf("record %d: got ord %d %+v, want %d %+v", i, ord, *got, i*1000, want)
		}
	}
	if _, _, err := r.next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last record: %v, want io.EOF", err)
	}
	// A record cut short is an error, not a message.
	r = spoolReader{r: bufio.NewReader(bytes.NewReader(spool[:len(spool)-3]))}
	var err error
	for err == nil {
		_, _, err = r.next()
	}
	if !errors.Is(err, errSpoolRecord) {
		t.Errorf("a record cut short: %v, want errSpoolRecord", err)
	}
}
