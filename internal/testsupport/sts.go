package testsupport

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// STSResponder answers STS GetCallerIdentity (and nothing else) on
// 127.0.0.1 with arn and account, as AWS does, for tests of the audit's
// actor: no local STS server runs here. It sets AWS_ENDPOINT_URL_STS for
// the test, so that the CLI's STS client (and only it) goes there.
func STSResponder(t testing.TB, arn, account string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.Form.Get("Action") != "GetCallerIdentity" || !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidAction</Code><Message>only GetCallerIdentity, signed</Message></Error></ErrorResponse>`)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult><Arn>%s</Arn><UserId>AROATEST:session</UserId><Account>%s</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>01234567-89ab-cdef-0123-456789abcdef</RequestId></ResponseMetadata></GetCallerIdentityResponse>`, arn, account)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_STS", srv.URL)
	return srv.URL
}
