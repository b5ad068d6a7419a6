package suggest

import "testing"

func TestClosest(t *testing.T) {
	commands := []string{"serve", "servers", "list-tools", "call", "check", "describe", "help", "completion"}
	for _, tc := range []struct {
		word       string
		candidates []string
		want       string
	}{
		{"sevrers", commands, "servers"},
		{"server", commands, "servers"},
		{"lsit-tools", commands, "list-tools"},
		{"chek", commands, "check"},
		{"CALL", commands, "call"},
		{"describ", commands, "describe"},
		{"zzz", commands, ""},
		{"install", commands, ""},
		{"argz", []string{"command", "args", "env", "cwd"}, "args"},
		{"ecko", []string{"echo", "add", "fail"}, "echo"},
		{"everythin", []string{"everything", "demo"}, "everything"},
		{"x", nil, ""},
	} {
		if got := Closest(tc.word, tc.candidates); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}
