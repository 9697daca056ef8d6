package iostreams

import "testing"

func TestColorRules(t *testing.T) {
	cases := []struct {
		env  map[string]string
		tty  bool
		want bool
	}{
		{nil, true, true},
		{nil, false, false},
		{map[string]string{"NO_COLOR": "1"}, true, false},
		{map[string]string{"NO_COLOR": ""}, true, true}, // empty means unset (no-color.org)
		{map[string]string{"CLICOLOR": "0"}, true, false},
		{map[string]string{"TERM": "dumb"}, true, false},
		{map[string]string{"CLICOLOR_FORCE": "1"}, false, true},
		{map[string]string{"CLICOLOR_FORCE": "0"}, false, false},
		{map[string]string{"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, false, false},
	}
	for _, c := range cases {
		s, _, _, _ := Test()
		s.SetEnv(func(k string) string { return c.env[k] })
		s.SetTTY(c.tty, c.tty, c.tty)
		if got := s.ColorEnabled(); got != c.want {
			t.Errorf("env %v tty %v: colour %v, want %v", c.env, c.tty, got, c.want)
		}
	}
}

func TestCanPrompt(t *testing.T) {
	s, _, _, _ := Test()
	s.SetTTY(true, false, true)
	if !s.CanPrompt() {
		t.Error("stdin and stderr are terminals: may prompt")
	}
	s.SetEnv(func(k string) string {
		if k == "DEADLETTER_NO_PROMPT" {
			return "1"
		}
		return ""
	})
	if s.CanPrompt() {
		t.Error("DEADLETTER_NO_PROMPT must disable prompting")
	}
	s.SetTTY(false, true, true)
	if s.CanPrompt() {
		t.Error("stdin is not a terminal: must not prompt")
	}
}

func TestTerminalWidth(t *testing.T) {
	s, _, _, _ := Test()
	s.SetEnv(func(k string) string { return map[string]string{"COLUMNS": "120"}[k] })
	if w := s.TerminalWidth(); w != 0 {
		t.Errorf("piped stdout: width %d, want 0 (not fitted)", w)
	}
	s.SetTTY(false, true, false)
	if w := s.TerminalWidth(); w != 120 {
		t.Errorf("terminal with COLUMNS=120: width %d", w)
	}
	s.SetWidth(90)
	if w := s.TerminalWidth(); w != 90 {
		t.Errorf("SetWidth(90): width %d", w)
	}
}
