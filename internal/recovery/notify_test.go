package recovery

import (
	"testing"

	"github.com/deadletter/deadletter/internal/dla/jsontext"
)

func TestJSNumberAndFloat4(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0, "0"}, {12.5, "12.5"}, {-3, "-3"}, {1e21, "1e+21"}, {1.5e-7, "1.5e-7"}, {0.000001, "0.000001"},
		{123456789012, "123456789012"}, {float4(12.345), "12.345"}, {float4(1714521599), "1714521600"},
		{float4(0.1), "0.1"},
	} {
		if got := jsontext.JSNumber(c.f); got != c.want {
			t.Errorf("jsontext.JSNumber(%v) = %s, want %s", c.f, got, c.want)
		}
	}
}

func TestJSJSON(t *testing.T) {
	for raw, want := range map[string]string{
		`{"b": [1.50, 1e2, -0, 12345678901234567890], "a": {"c": "x\ny", "d": null, "e": true}}`: `{"b":[1.5,100,0,12345678901234567000],"a":{"c":"x\ny","d":null,"e":true}}`,
		`[]`: `[]`, `{}`: `{}`, `"s"`: `"s"`, `0.0000001`: `1e-7`,
	} {
		if got := jsJSON(raw); got != want {
			t.Errorf("jsJSON(%s) = %s, want %s", raw, got, want)
		}
	}
}
