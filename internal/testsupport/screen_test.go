package testsupport

import (
	"regexp"
	"slices"
	"testing"
)

func TestRenderPlaysWhatTheToolsPrint(t *testing.T) {
	cases := []struct {
		text string
		want []string
		col  int
	}{
		{"abc\rX\n", []string{"Xbc"}, 0},
		{"progress 1\rprogress 22\x1b[K", []string{"progress 22"}, 11},
		{"one\nprogress\n\r\x1b[2K\x1b[1A\x1b[2Kwarning\n", []string{"one", "warning"}, 0},
		{"\x1b[33mcol\x1b[0mour\x1b]8;;u\x07", []string{"colour"}, 6},
		{"abcdef", []string{"abcd", "ef"}, 2}, // wraps at 4 columns
	}
	for _, c := range cases {
		cols := 80
		if c.text == "abcdef" {
			cols = 4
		}
		if got := Render(c.text, cols); !slices.Equal(got.Rows, c.want) || got.CursorCol != c.col {
			t.Errorf("Render(%q, %d) = %q (cursor at column %d), want %q (%d)", c.text, cols, got.Rows, got.CursorCol, c.want, c.col)
		}
	}
}

func TestGluedToStatusFindsAProgressLineNotErased(t *testing.T) {
	status := regexp.MustCompile(`replaying: \d+ of \d+ done`)
	r := Render("plan\nreplaying: 3 of 9 done\rreplaying: 4 of 9 doneKilled\nreplaying: 5 of 9 done\n", 80)
	if got := GluedToStatus(r, status); !slices.Equal(got, []string{"replaying: 4 of 9 doneKilled"}) {
		t.Errorf("glued rows %q", got)
	}
}
