package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPrepare(t *testing.T) {
	root := t.TempDir()
	mk := func(rel, content string) string {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if content != "" {
			os.WriteFile(p, []byte(content), 0o644)
		}
		return p
	}
	script := mk("app/node_modules/@x/srv/dist/index.js", "//")
	pyfile := mk("py/pkg/sub/main.py", "#")
	mk("py/pkg/pyproject.toml", "[project]")
	registryFile := mk("conf/external-mcp.json", "{}")
	beside := mk("conf/server.js", "//")
	state := filepath.Join(root, "state")
	in := Input{Server: "s", Argv: []string{"/usr/bin/node", script, "--flag", "relative.txt", beside},
		Dir: root, StateDir: state, Protect: []string{registryFile}, ABI: NeedABI,
		Spec: Spec{Read: []string{mk("data/x", "x")}, Net: false, MaxMemoryMB: 256}}
	p, warning, err := Prepare(in)
	if err != nil || warning != "" {
		t.Fatalf("Prepare: %v, %q", err, warning)
	}
	for _, want := range []string{"/usr", "/etc", "/usr/bin", filepath.Join(root, "app/node_modules"), script, beside} {
		if !slices.Contains(p.Read, want) {
			t.Errorf("read lacks %s: %v", want, p.Read)
		}
	}
	if slices.Contains(p.Read, filepath.Join(root, "conf")) {
		t.Errorf("the registry's folder is granted: %v", p.Read)
	}
	if p.Home != HomeDir(state, "s") || !strings.HasPrefix(p.Tmp, filepath.Join(state, "tmp", "s")+"/") || p.Net || p.MemoryMB != 256 {
		t.Errorf("plan %+v", p)
	}
	if q, _, _ := Prepare(in); q.Tmp == p.Tmp {
		t.Error("two processes share a TMPDIR")
	}
	in.Argv = []string{"/usr/bin/python3", pyfile}
	if p, _, _ = Prepare(in); !slices.Contains(p.Read, filepath.Join(root, "py/pkg")) {
		t.Errorf("python package root not granted: %v", p.Read)
	}

	// A granted folder that holds colibri's file: config.
	in.Spec.Write = []string{filepath.Join(root, "conf")}
	_, _, err = Prepare(in)
	if e, ok := err.(*Error); !ok || !e.Config || !strings.Contains(e.Msg, "write/0") || !strings.Contains(e.Msg, registryFile) {
		t.Errorf("err = %v", err)
	}
	in.Spec.Write = nil

	// A kernel short of ABI 6: kind sandbox naming what is missing, or a
	// warning under best_effort.
	in.ABI = 4
	_, _, err = Prepare(in)
	if e, ok := err.(*Error); !ok || e.Config || !strings.Contains(e.Msg, "ABI 4") || !strings.Contains(e.Msg, "scoping of signals") || strings.Contains(e.Msg, "TCP") {
		t.Errorf("err = %v", err)
	}
	in.Spec.BestEffort = true
	if p, warning, err = Prepare(in); err != nil || !strings.Contains(warning, "best_effort") || p.ABI != 4 {
		t.Errorf("best effort: %v, %q, %+v", err, warning, p)
	}
	in.StateDir = ""
	if _, _, err = Prepare(in); err == nil {
		t.Error("no state folder accepted")
	}
}

func TestArgvRoundTrip(t *testing.T) {
	p := &Plan{Read: []string{"/a b"}, Tmp: "/s/tmp/x/1", Net: true, ABI: 7}
	args := Argv("/bin/colibri", p, []string{"/bin/srv", "--x", LauncherArg})
	got, argv, err := parseArgv(args)
	if err != nil || got.Read[0] != "/a b" || !slices.Equal(argv, []string{"/bin/srv", "--x", LauncherArg}) {
		t.Fatalf("%+v %q %v", got, argv, err)
	}
	for _, bad := range [][]string{
		{"/bin/colibri", LauncherArg, "tmp=/t", "--", "relative"},
		{"/bin/colibri", LauncherArg, "tmp=/t", "/bin/srv"},
		{"/bin/colibri", LauncherArg, "tmp=/t", "mem=-1", "--", "/bin/srv"},
		{"/bin/colibri", LauncherArg, "what=1", "--", "/bin/srv"},
	} {
		if _, _, err := parseArgv(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if Limits(Argv("c", &Plan{MemoryMB: 64, CPUSeconds: 2}, []string{"/x"})) != "max_memory_mb 64, max_cpu_seconds 2" {
		t.Error("Limits")
	}
}

// The command's own files never widen to HOME: a binary in ~, an argument
// that is a file in ~, a script under a folder of ~ where a package.json
// was left in ~ itself. Each gets the file, not the user's every file.
func TestPrepareNeverGrantsHome(t *testing.T) {
	home := t.TempDir()
	for _, f := range []string{"srv", "notes.md", "package.json", "proj/sub/x.js"} {
		os.MkdirAll(filepath.Join(home, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(home, f), []byte("x"), 0o755)
	}
	in := Input{Server: "s", StateDir: filepath.Join(home, ".local/state/colibri-mcp"), ABI: NeedABI, Home: home,
		Argv: []string{filepath.Join(home, "srv"), filepath.Join(home, "notes.md"), filepath.Join(home, "proj/sub/x.js")}}
	p, _, err := Prepare(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Read {
		if isWithin(home, r) {
			t.Errorf("read grants %s, which holds HOME %s: %v", r, home, p.Read)
		}
	}
	for _, want := range in.Argv {
		if !slices.Contains(p.Read, want) {
			t.Errorf("read lacks the command's own file %s: %v", want, p.Read)
		}
	}
	if !slices.Contains(p.Read, filepath.Join(home, "proj/sub")) {
		t.Errorf("the script's own folder is not granted: %v", p.Read)
	}
}

// A plan too long for one argument of a command line is a config error,
// not a start that fails E2BIG each time as if the system were short.
func TestPrepareBoundsThePlan(t *testing.T) {
	long := "/" + strings.Repeat("d", 250)
	var read []string
	for i := range 64 {
		read = append(read, strings.Repeat(long, 15)+strconv.Itoa(i))
	}
	_, _, err := Prepare(Input{Server: "s", StateDir: t.TempDir(), ABI: NeedABI, Argv: []string{"/usr/bin/true"},
		Spec: Spec{Read: read, Write: read}})
	if e, ok := err.(*Error); !ok || !e.Config || !strings.Contains(e.Msg, "65536") {
		t.Errorf("err = %v, want a config error naming the bound", err)
	}
}

// A granted path that is a symbolic link is granted as what it pointed at
// when colibri checked it: swapping the link before the launcher makes its
// rule (to colibri's own folder) grants nothing new.
func TestPrepareGrantsWhatItChecked(t *testing.T) {
	root := t.TempDir()
	data, conf := filepath.Join(root, "data"), filepath.Join(root, "conf")
	os.Mkdir(data, 0o755)
	os.Mkdir(conf, 0o755)
	registryFile := filepath.Join(conf, "external-mcp.json")
	os.WriteFile(registryFile, []byte("{}"), 0o600)
	link := filepath.Join(root, "share")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	p, _, err := Prepare(Input{Server: "s", StateDir: filepath.Join(root, "state"), ABI: NeedABI, Argv: []string{"/usr/bin/true"},
		Protect: []string{registryFile}, Spec: Spec{Read: []string{link}}})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(link)
	os.Symlink(conf, link) // swapped between the check and the rule
	if slices.Contains(p.Read, link) || !slices.Contains(p.Read, data) {
		t.Errorf("read %v: want %s, what %s pointed at when checked", p.Read, data, link)
	}
}

// colibri's default registry lives under /usr (/usr/local/etc/colibri),
// a system place: the place is granted around colibri's folder, not
// whole, and the rest of it stays readable.
func TestPrepareSystemPlacesAroundColibrisFiles(t *testing.T) {
	usr := t.TempDir()
	for _, f := range []string{"bin/node", "local/bin/x", "local/etc/colibri/external-mcp.json", "local/etc/colibri/external-mcp.json.bak", "local/etc/ssl/cert.pem", "share/doc"} {
		os.MkdirAll(filepath.Join(usr, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(usr, f), []byte("x"), 0o644)
	}
	defer func(old []string) { systemPlaces = old }(systemPlaces)
	systemPlaces = []string{usr}
	registryFile := filepath.Join(usr, "local/etc/colibri/external-mcp.json")
	p, _, err := Prepare(Input{Server: "s", StateDir: t.TempDir(), ABI: NeedABI, Argv: []string{"/usr/bin/true"}, Protect: []string{registryFile}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Read {
		if isWithin(registryFile, r) || isWithin(registryFile+".bak", r) {
			t.Errorf("read grants %s, which holds colibri's folder: %v", r, p.Read)
		}
	}
	for _, want := range []string{"bin", "share", "local/bin", "local/etc/ssl"} {
		if !slices.Contains(p.Read, filepath.Join(usr, want)) {
			t.Errorf("read lacks %s: %v", want, p.Read)
		}
	}
}

// A unix grant is Landlock's rule from ABI 9; below it the kernel cannot
// tell socket paths apart: kind sandbox (not config), or with best_effort
// every Unix socket open, with a warning that says so.
func TestPrepareUnixGrant(t *testing.T) {
	root := t.TempDir()
	sock := filepath.Join(root, ".s.PGSQL.5432")
	in := Input{Server: "db", Argv: []string{"/bin/true"}, Dir: root, StateDir: filepath.Join(root, "state"), ABI: unixRulesABI,
		Spec: Spec{Unix: []string{sock}}}
	p, warning, err := Prepare(in)
	if err != nil || warning != "" || !slices.Equal(p.Unix, []string{sock}) || p.UnixOpen {
		t.Fatalf("ABI 9: %+v, %q, %v", p, warning, err)
	}
	in.ABI = 7
	_, _, err = Prepare(in)
	if e, ok := err.(*Error); !ok || e.Config || !strings.Contains(e.Msg, "ABI 7") || !strings.Contains(e.Msg, "ABI 9") {
		t.Errorf("ABI 7: %v, want a kind sandbox error naming both ABIs", err)
	}
	in.Spec.BestEffort = true
	p, warning, err = Prepare(in)
	if err != nil || !p.UnixOpen || !strings.Contains(warning, "every pathname Unix socket is reachable") {
		t.Errorf("ABI 7, best_effort: %+v, %q, %v", p, warning, err)
	}
	in.Spec.Unix = nil
	if p, warning, _ = Prepare(in); p.UnixOpen || warning != "" {
		t.Errorf("ABI 7, best_effort, no unix: open %v, %q: Unix sockets stay closed", p.UnixOpen, warning)
	}
}
