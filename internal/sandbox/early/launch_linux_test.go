package early

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// This test binary is a launcher too: the package's init reads its
// arguments. A plan colibri could not make (fail=), or one it cannot read,
// starts nothing: exit status 126 and the reason on stderr.
func TestLauncherStartsNothingOnAFailedPlan(t *testing.T) {
	allow := EncodeFilter([]Insn{{Code: 0x06, K: 0x7fff0000}}) // ret ALLOW
	for _, c := range []struct {
		plan []string
		want string
	}{
		{[]string{"tmp=" + t.TempDir(), "fail=assembling the seccomp filter: no"}, "colibri sandbox: assembling the seccomp filter: no\n"},
		{[]string{"tmp=" + t.TempDir(), "mem=lots"}, "colibri sandbox: a plan argument it cannot read: mem=lots\n"},
		{[]string{"home=" + t.TempDir(), "bpf=" + allow}, "colibri sandbox: the plan has no private TMPDIR\n"},
		{[]string{"tmp=" + t.TempDir()}, "colibri sandbox: the plan has no seccomp filter\n"},
	} {
		args := append(append([]string{Marker}, c.plan...), End, "/bin/sh", "-c", "echo started")
		cmd := exec.Command(os.Args[0], args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 126 || len(out) != 0 || stderr.String() != c.want {
			t.Errorf("%q: %v, stdout %q, stderr %q", c.plan, err, out, stderr.String())
		}
	}
}

// The private HOME and TMPDIR are made with their missing parents, 0700,
// and a file in their place is refused.
func TestMkdirAll(t *testing.T) {
	root := t.TempDir()
	dir := root + "/a/b/c"
	for range 2 { // made, then there already
		if err := mkdirAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{root + "/a", root + "/a/b", dir} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, st, err)
		}
	}
	if err := os.WriteFile(root+"/f", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := mkdirAll(root + "/f"); err == nil {
		t.Error("a file taken for the folder")
	}
	if err := mkdirAll(root + "/f/x"); err == nil {
		t.Error("a folder made under a file")
	}
}
