package sqsmove

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The spool's record: a message in a length-prefixed binary form, read
// back only by the same process (the spool is unlinked once open). It
// replaced JSON lines because a body is usually JSON itself, whose every
// quote json.Marshal escaped on the way in and unescaped on the way out.
//
//	record  = uvarint(len(payload)) payload
//	payload = uvarint(ord) str(id) str(handle) str(body) str(md5)
//	          map(message attributes: str(name) str(type) flags [str(string)] [str(binary)])
//	          map(attributes: str(name) str(value))
//	str     = uvarint(len) bytes
//	map     = uvarint(0) for a nil map, else uvarint(n+1) and n entries
//
// flags: 1 a string value is present, 2 a binary value is (an empty one is
// dropped, as the JSON form's omitempty did).

// appendSpoolRecord appends one record for m.
func appendSpoolRecord(b []byte, ord int32, m *Message) []byte {
	start := len(b)
	b = append(b, 0, 0, 0, 0, 0) // room for the length, fixed up below
	body := len(b)
	b = binary.AppendUvarint(b, uint64(ord))
	b = appendSpoolString(b, m.MessageID)
	b = appendSpoolString(b, m.ReceiptHandle)
	b = appendSpoolString(b, m.Body)
	b = appendSpoolString(b, m.MD5OfBody)
	if m.MessageAttributes == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(m.MessageAttributes))+1)
		for k, v := range m.MessageAttributes {
			b = appendSpoolString(b, k)
			b = appendSpoolString(b, v.DataType)
			var flags byte
			if v.StringValue != nil {
				flags |= 1
			}
			if len(v.BinaryValue) > 0 {
				flags |= 2
			}
			b = append(b, flags)
			if v.StringValue != nil {
				b = appendSpoolString(b, *v.StringValue)
			}
			if len(v.BinaryValue) > 0 {
				b = binary.AppendUvarint(b, uint64(len(v.BinaryValue)))
				b = append(b, v.BinaryValue...)
			}
		}
	}
	if m.Attributes == nil {
		b = append(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(m.Attributes))+1)
		for k, v := range m.Attributes {
			b = appendSpoolString(b, k)
			b = appendSpoolString(b, v)
		}
	}
	// The length goes in front, in the five bytes kept for it (a record
	// is far below 2^35 bytes): a uvarint padded with continuation bytes.
	n := uint64(len(b) - body)
	for i := range 5 {
		c := byte(n & 0x7f)
		n >>= 7
		if i < 4 {
			c |= 0x80
		}
		b[start+i] = c
	}
	return b
}

func appendSpoolString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// spoolReader reads the records appendSpoolRecord wrote.
type spoolReader struct {
	r   *bufio.Reader
	buf []byte
}

// errSpoolRecord is a record that does not decode: the spool is damaged.
var errSpoolRecord = errors.New("a spool record is damaged")

// next reads one record; io.EOF at the end of the spool.
func (s *spoolReader) next() (int32, *Message, error) {
	n, err := binary.ReadUvarint(s.r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil, io.EOF
		}
		return 0, nil, err
	}
	if n > 1<<31 {
		return 0, nil, errSpoolRecord
	}
	if uint64(cap(s.buf)) < n {
		s.buf = make([]byte, n)
	}
	p := s.buf[:n]
	if _, err := io.ReadFull(s.r, p); err != nil {
		// Not wrapped: a record cut right after its length reads io.EOF
		// here, which the caller would take for the spool's clean end.
		return 0, nil, fmt.Errorf("%w: %v", errSpoolRecord, err)
	}
	d := spoolDecoder{p: p}
	ord := d.uvarint()
	m := &Message{MessageID: d.str(), ReceiptHandle: d.str(), Body: d.str(), MD5OfBody: d.str()}
	if k := d.uvarint(); k > 0 && d.err == nil {
		m.MessageAttributes = make(map[string]Attribute, min(k-1, 64))
		for range k - 1 {
			if d.err != nil {
				break
			}
			name := d.str()
			a := Attribute{DataType: d.str()}
			flags := d.byte()
			if flags&1 != 0 {
				v := d.str()
				a.StringValue = &v
			}
			if flags&2 != 0 {
				a.BinaryValue = []byte(d.str())
			}
			m.MessageAttributes[name] = a
		}
	}
	if k := d.uvarint(); k > 0 && d.err == nil {
		m.Attributes = make(map[string]string, min(k-1, 64))
		for range k - 1 {
			if d.err != nil {
				break
			}
			name := d.str()
			m.Attributes[name] = d.str()
		}
	}
	if d.err != nil || len(d.p) != 0 || ord > 1<<31-1 {
		return 0, nil, errSpoolRecord
	}
	return int32(ord), m, nil
}

// spoolDecoder reads the fields of one record's payload; the first
// error sticks.
type spoolDecoder struct {
	p   []byte
	err error
}

func (d *spoolDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.err = errSpoolRecord
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *spoolDecoder) byte() byte {
	if d.err != nil || len(d.p) == 0 {
		d.err = errSpoolRecord
		return 0
	}
	c := d.p[0]
	d.p = d.p[1:]
	return c
}

func (d *spoolDecoder) str() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.p)) {
		d.err = errSpoolRecord
		return ""
	}
	s := string(d.p[:n])
	d.p = d.p[n:]
	return s
}
