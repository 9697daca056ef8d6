package sqsmove

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// spoolWant is what the spool must give back for m: what the JSON
// lines it replaced gave back (an empty binary value dropped).
func spoolWant(t testing.TB, m *Message) Message {
	js, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var want Message
	if err := json.Unmarshal(js, &want); err != nil {
		t.Fatal(err)
	}
	// JSON turns invalid UTF-8 into U+FFFD; the binary spool keeps the
	// bytes, which is what is sent on: compare the raw strings instead.
	want.MessageID, want.ReceiptHandle, want.Body, want.MD5OfBody = m.MessageID, m.ReceiptHandle, m.Body, m.MD5OfBody
	if m.MessageAttributes != nil {
		want.MessageAttributes = map[string]Attribute{}
		for k, v := range m.MessageAttributes {
			a := Attribute{DataType: v.DataType, StringValue: v.StringValue}
			if len(v.BinaryValue) > 0 {
				a.BinaryValue = v.BinaryValue
			}
			want.MessageAttributes[k] = a
		}
	}
	if m.Attributes != nil {
		want.Attributes = map[string]string{}
		for k, v := range m.Attributes {
			want.Attributes[k] = v
		}
	}
	return want
}

// Any bytes in any field of a held message come back from the spool as
// they went in, and a spool cut at any byte inside a record is an error
// (never a message, never a clean end).
func FuzzSpoolRoundTrip(f *testing.F) {
	f.Add(int32(0), "id", "rh", `{"a":1}`, "md5", "name", "String", "v", []byte{0, 255}, "MessageGroupId", "g", true)
	f.Add(int32(1<<31-1), "\xff", "", "\u2028\x00", "", "", "", "", []byte{}, "", "", false)
	f.Fuzz(func(t *testing.T, ord int32, id, handle, body, md5, name, typ, val string, bin []byte, sysName, sysVal string, withString bool) {
		if ord < 0 {
			ord = -(ord + 1) // an ord is an index
		}
		a := Attribute{DataType: typ, BinaryValue: bin}
		if withString {
			a.StringValue = &val
		}
		msgs := []*Message{
			{MessageID: id, ReceiptHandle: handle, Body: body, MD5OfBody: md5,
				MessageAttributes: map[string]Attribute{name: a, name + "\x00": {DataType: val}},
				Attributes:        map[string]string{sysName: sysVal}},
			{MessageID: body},
			{MessageID: id, MessageAttributes: map[string]Attribute{}, Attributes: map[string]string{}},
		}
		var spool []byte
		var ends []int
		for _, m := range msgs {
			spool = appendSpoolRecord(spool, ord, m)
			ends = append(ends, len(spool))
		}
		r := spoolReader{r: bufio.NewReader(bytes.NewReader(spool))}
		for i, m := range msgs {
			o, got, err := r.next()
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			if want := spoolWant(t, m); o != ord || !reflect.DeepEqual(*got, want) {
				t.Fatalf("record %d: got %d %+v, want %d %+v", i, o, *got, ord, want)
			}
		}
		if _, _, err := r.next(); !errors.Is(err, io.EOF) {
			t.Fatalf("after the last record: %v", err)
		}
		// Cut inside the first record, at every byte.
		for cut := 1; cut < ends[0]; cut++ {
			r := spoolReader{r: bufio.NewReader(bytes.NewReader(spool[:cut]))}
			_, m, err := r.next()
			if err == nil || errors.Is(err, io.EOF) || m != nil {
				t.Fatalf("the first record cut at byte %d of %d: %v, %v; want an error", cut, ends[0], m, err)
			}
		}
	})
}

// Damaged spool bytes never panic the reader nor make it allocate without
// bound; whatever it returns is an error or a message.
func FuzzSpoolDamaged(f *testing.F) {
	f.Add(appendSpoolRecord(nil, 3, &Message{MessageID: "a", MessageAttributes: map[string]Attribute{"x": {DataType: "String"}}, Attributes: map[string]string{"k": "v"}}))
	f.Add([]byte{0x85, 0x80, 0x80, 0x80, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := spoolReader{r: bufio.NewReader(bytes.NewReader(b))}
		for range 100 {
			_, m, err := r.next()
			if err != nil {
				return
			}
			if m == nil {
				t.Fatal("no error and no message")
			}
		}
	})
}

// A spool cut right after a record's length (the payload missing
// entirely) is damaged, not the spool's end: Hold.Each stops cleanly at
// io.EOF, so an error that is io.EOF there would end the replay early with
// the rest of the held messages neither sent nor reported.
func TestSpoolCutAfterLengthIsNotTheEnd(t *testing.T) {
	rec := appendSpoolRecord(nil, 0, &Message{MessageID: "a", Body: "b"})
	spool := append(appendSpoolRecord(nil, 0, &Message{MessageID: "first"}), rec[:5]...) // the second's length only
	r := spoolReader{r: bufio.NewReader(bytes.NewReader(spool))}
	if _, m, err := r.next(); err != nil || m.MessageID != "first" {
		t.Fatalf("first record: %v %v", m, err)
	}
	_, _, err := r.next()
	if !errors.Is(err, errSpoolRecord) || errors.Is(err, io.EOF) {
		t.Errorf("a record with its length but no payload: %v; want errSpoolRecord, not io.EOF", err)
	}
}
