package main_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/deadletter/deadletter/internal/testsupport"
)

// Bodies and attributes holding awkward bytes (escape codes in
// JSON escapes, raw CR/LF/TAB, U+2028, astral characters, big bodies near
// the batch limit, ten attributes of every type) reach their target byte
// for byte, and the ineligible ones stay in the DLQ untouched.
func TestAwkwardBodiesArriveExactly(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, 2)
	pad := func(n int) string { return strings.Repeat("x", n) }
	ok := func(p int, extra string) string {
		return fmt.Sprintf(`{"priority":%d,"createdAt":%d,"errorCode":1004,"errorMessage":"e"%s}`, p, inWindow, extra)
	}
	bodies := []string{
		ok(1, `,"t":"\u001b]0;PWNED\u0007\u001b[2J\u009b31m"`),
		"{\r\n\t\"priority\": 2,\r\n\t\"createdAt\": \"2025-11-14T08:40:00Z\",\n\"errorCode\": 1004, \"errorMessage\": \"line1\\nline2\"}",
		ok(1, ",\"u\":\"\u2028\u2029 é ü \uFFFD\""),
		ok(2, `,"k":33,"pad":"`+pad(200_000)+`"`),
		ok(2, `,"k":34,"pad":"`+pad(200_000)+`"`),
		ok(1, `,"k":35,"pad":"`+pad(60_000)+`"`),
		ok(1, `,"k":36,"pad":"`+pad(60_000)+`"`),
		ok(1, `,"k":37,"pad":"`+pad(60_000)+`"`),
		ok(1, `,"k":38,"pad":"`+pad(60_000)+`"`),
		ok(1, `,"k":39,"pad":"`+pad(60_000)+`"`),
		"not json\r\n\t\"\u2028",
		`{"priority":1,"createdAt":` + fmt.Sprint(inWindow) + `,"errorCode":"1004","errorMessage":"code is a string"}`,
		`{"priority":1.5,"createdAt":` + fmt.Sprint(inWindow) + `,"errorCode":1004,"errorMessage":"x"}`,
		`{"priority":1,"priority":2,"createdAt":` + fmt.Sprint(inWindow) + `,"errorCode":1004,"errorMessage":"dup key: last wins, as JSON.parse"}`,
	}
	want := []string{"P1", "P2", "P1", "P2", "P2", "P1", "P1", "P1", "P1", "P1", "DLQ", "DLQ", "DLQ", "P2"}
	attrs := func(i int) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{
			"origin":          {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprint("push-", i))},
			"bin":             {DataType: aws.String("Binary"), BinaryValue: []byte{0, 0xff, 0x1b, '\n', byte(i)}},
			"num":             {DataType: aws.String("Number"), StringValue: aws.String("-1.5e3")},
			"custom":          {DataType: aws.String("String.json"), StringValue: aws.String("{\"a\":\"\r\n\"}")},
			"bin.custom":      {DataType: aws.String("Binary.gz"), BinaryValue: []byte{1, 2, 3}},
			"uni":             {DataType: aws.String("String"), StringValue: aws.String("é\u2028")},
			"a-b_c.d":         {DataType: aws.String("String"), StringValue: aws.String(" leading and trailing ")},
			"n2":              {DataType: aws.String("Number.int"), StringValue: aws.String("007")},
			"Tab":             {DataType: aws.String("String"), StringValue: aws.String("\t")},
			"x-amz-notreally": {DataType: aws.String("String"), StringValue: aws.String("z")},
		}
	}
	for i, b := range bodies {
		_, err := w.c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(w.dlq), MessageBody: aws.String(b), MessageAttributes: attrs(i)})
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
	}
	stdout, stderr, code := w.run(nil, "", w.replayArgs("--yes", "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	queues := map[string]string{"DLQ": w.dlq, "P1": w.base + "P1", "P2": w.base + "P2"}
	got := map[string][]string{}
	for name, u := range queues {
		for _, m := range testsupport.Drain(t, w.c, u, 3*time.Second) {
			b := aws.ToString(m.Body)
			got[b] = append(got[b], name)
			i := -1
			for j := range bodies {
				if bodies[j] == b {
					i = j
				}
			}
			if i < 0 {
				t.Errorf("a body in %s is none of the seeded ones (altered?): %.80q", name, b)
				continue
			}
			wa := attrs(i)
			if len(m.MessageAttributes) != len(wa) {
				t.Errorf("body %d in %s: %d attributes, want %d", i, name, len(m.MessageAttributes), len(wa))
			}
			for k, v := range wa {
				g := m.MessageAttributes[k]
				if aws.ToString(g.DataType) != aws.ToString(v.DataType) || aws.ToString(g.StringValue) != aws.ToString(v.StringValue) || !reflect.DeepEqual(g.BinaryValue, v.BinaryValue) {
					t.Errorf("body %d in %s: attribute %s = %s %q %v, want %s %q %v", i, name, k,
						aws.ToString(g.DataType), aws.ToString(g.StringValue), g.BinaryValue, aws.ToString(v.DataType), aws.ToString(v.StringValue), v.BinaryValue)
				}
			}
		}
	}
	for i, b := range bodies {
		if g := got[b]; len(g) != 1 || g[0] != want[i] {
			t.Errorf("body %d (%.60q) is in %v, want [%s]", i, b, g, want[i])
		}
	}
}
