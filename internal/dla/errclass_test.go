package dla

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestErrorClassMasksWhatVariesAndKeepsWhatNamesTheFailure(t *testing.T) {
	cases := map[string]string{
		"": "",
		"UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL. No records written to the database.":                                                                                                                                                           "UnmetRequirementsError: Could not satisfy requirements for writing records to PostgreSQL. No records written to the database.",
		"AggregateError: \n    Error: A granule already exists for granuleId: MOD04_L2.A2024015.0845.061.2024019090753 with collectionId: MOD09GQ___006\n    at x (/var/task/index.js:1:2)":                                                                                                       "AggregateError: Error: A granule already exists for granuleId: <id> with collectionId: <collection>",
		`RecordDoesNotExist: Record in providers with identifiers {"name":"LANCE_NRT"} does not exist.`:                                                                                                                                                                                           `RecordDoesNotExist: Record in providers with identifiers {"name":"<v>"} does not exist.`,
		"ExecutionDoesNotExist: arn:aws:states:us-east-1:1:execution:sm:0e1be317-0d83-453a-bf67-65c3826f4fc5 after 3 tries":                                                                                                                                                                       "ExecutionDoesNotExist: <arn> after <n> tries",
		"AggregateError: \n    Error: Record in pdrs with identifiers {\"name\":\"A.PDR\"} does not exist.\n        at x (/var/task/index.js:12:3)\n    SchemaValidationError: The record has validation errors\n    Error: Record in pdrs with identifiers {\"name\":\"B.PDR\"} does not exist.": `AggregateError: Error: Record in pdrs with identifiers {"name":"<v>"} does not exist.; SchemaValidationError: The record has validation errors`,
		"Error: Request failed with status code 503 (/var/task/index.js:10:2)":                                                                                                                                                                                                                    "Error: Request failed with status code 503",
		"Error: HTTP 404 after 3 tries at 2024-03-02T10:11:12.123Z":                                                                                                                                                                                                                               "Error: HTTP 404 after <n> tries at <date>",
		"ETag mismatch: d41d8cd98f00b204e9800998ecf8427e":                                                                                                                                                                                                                                         "ETag mismatch: <hex>",
		"Error: fetching https://cmr.earthdata.nasa.gov/search/granules.json?x=1 failed":                                                                                                                                                                                                          "Error: fetching <url> failed",
		"TypeError: Cannot destructure property 'startDate' of 'undefined' as it is undefined.\n    at getExecutionProcessingTimes (/var/task/index.js:1:2)":                                                                                                                                      "TypeError: Cannot destructure property 'startDate' of 'undefined' as it is undefined.",
		"\xff\xfeError: bad bytes": "\ufffdError: bad bytes",
		"Error: HTTP/1.1 503 then status=404 and {\"statusCode\":500} and Response code 502 after 3 tries": `Error: HTTP/1.1 503 then status=404 and {"statusCode":500} and Response code 502 after <n> tries`,
		"SchemaValidationError: a\x00b\u202e\u2028c":                                                       "SchemaValidationError: a\ufffdb\ufffd\ufffdc",
		"AggregateErrorX: foo": "AggregateErrorX: foo",
	}
	for in, want := range cases {
		if got := ErrorClass(in); got != want {
			t.Errorf("ErrorClass(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// Hostile texts: any byte, huge, deeply nested; a class is valid UTF-8,
// bounded, one line, and the same text always has the same class.
func TestErrorClassOfHostileTextsIsBoundedOneLineUTF8(t *testing.T) {
	deep := strings.Repeat("AggregateError: \n", 5000) + "Error: x"
	for _, in := range []string{
		strings.Repeat("x", 1<<20),
		strings.Repeat("Error: \x00\x1b[31m\xc3", 10000),
		deep,
		"AggregateError",
		"AggregateError: \n at a (/x.js:1:1)",
		strings.Repeat("\n", 1000) + "KnexTimeoutError: late",
	} {
		c := ErrorClass(in)
		if !utf8.ValidString(c) || len(c) > maxClassLen+len("…") || strings.ContainsAny(c, "\n\r") || c != ErrorClass(in) {
			t.Errorf("ErrorClass(%.40q) = %.80q: not a bounded, one-line, UTF-8, stable class", in, c)
		}
	}
	if c := ErrorClass(strings.Repeat("\n", 1000) + "KnexTimeoutError: late"); c != "KnexTimeoutError: late" {
		t.Errorf("leading blank lines: %q", c)
	}
}
