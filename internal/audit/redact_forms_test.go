package audit

import (
	"strings"
	"testing"
)

// Every form a password or token can take on a command line: none of its
// bytes may be left in the redacted argv.
func TestRedactArgvLeavesNoByteOfASecretInAnyForm(t *testing.T) {
	for _, argv := range [][]string{
		{"--database-url", "postgres://u:SECRETPW@h/db"},
		{"--database-url=postgres://u:SECRETPW@h/db"},
		{"--database-url", "postgres://u:SE%40CRETPW@h/db"},
		{"--database-url", "postgres://u:SE@CRETPW@h/db"},
		{"--database-url", "postgres://u:SE/CRETPW@h/db"},
		{"--database-url", "postgres://u:SE#CRETPW@h/db"},
		{"--database-url", "postgres://u:SE CRETPW@h/db"},
		{"--database-url", "postgres://u:1234/SECRETPW@h/db"},
		{"--database-url", "postgres://u:SECRETPW@h1,h2/db"},
		{"--database-url", "postgres://h/db?user=u&password=SECRETPW&sslmode=disable"},
		{"--database-url", "postgres://h/db?sslpassword=SECRETPW"},
		{"--database-url", "postgres://h/db?PassWord=SECRETPW"},
		{"--database-url", "host=h password=SECRETPW dbname=d"},
		{"--database-url", "host=h password = 'SE CRETPW' dbname=d"},
		{"--database-url", `host=h password=SE\ CRETPW dbname=d`},
		{"--database-url", `host=h password='SE\'CRETPW' dbname=d`},
		{"--database-url", "host=h sslpassword=SECRETPW dbname=d"},
		{"--via-api", "https://u:SECRETPW@api.example/dev"},
		{"--via-api", "https://SECRETPW@api.example/dev"},
		{"--via-api", "https://api.example/dev?access_token=SECRETPW"},
		{"--via-api=https://u:SECRETPW@api.example/dev"},
		{"postgres://u:SECRETPW@h/db?next=postgres://v:SECRETPW@h"},
	} {
		got := strings.Join(RedactArgv(argv), " ")
		if strings.Contains(got, "SECRETPW") || strings.Contains(got, "CRETPW") {
			t.Errorf("RedactArgv(%q) = %q: the secret is left", argv, got)
		}
	}
}

// The name of a secret and the rest of a connection string stay.
func TestRedactArgvKeepsSecretNamesAndTheRestOfTheString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"--db-secret=arn:aws:secretsmanager:us-east-1:1:secret:db", "--db-secret=arn:aws:secretsmanager:us-east-1:1:secret:db"},
		{"postgres://h/db?user=u&password=pw&sslmode=disable", "postgres://h/db?user=u&password=REDACTED&sslmode=disable"},
		{"postgres://alice@h/db", "postgres://alice@h/db"},
		{"see https://jira/INC-1 by alice@corp", "see https://jira/INC-1 by alice@corp"},
	} {
		if got := RedactArgv([]string{c.in})[0]; got != c.want {
			t.Errorf("RedactArgv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// An error text keeps its words around the URL it redacts, and every URL
// in it is redacted.
func TestRedactTextRedactsEveryURLOfAnErrorAndKeepsItsWords(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`parse "postgres://u:pw@h:bad/db": invalid port ":bad" after host; as user@host`,
			`parse "postgres://u:REDACTED@h:bad/db": invalid port ":bad" after host; as user@host`},
		{"from postgres://u:pw@a/x to postgres://v:pw2@b/y", "from postgres://u:REDACTED@a/x to postgres://v:REDACTED@b/y"},
		{"HTTP 401: echo Authorization: Bearer abc.def", "HTTP 401: echo Authorization: Bearer REDACTED"},
		{"HTTP 401: AUTHORIZATION: BEARER abc.def", "HTTP 401: AUTHORIZATION: BEARER REDACTED"},
	} {
		if got := RedactText(c.in); got != c.want {
			t.Errorf("RedactText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
