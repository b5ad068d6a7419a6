package colibri_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/testbuild"
)

// TestMain lets the test binary play the service's process for
// TestRCDReload: it says "ready" once it catches SIGHUP, and exits 0 when
// one comes. (A plain `sleep` inherits the test's own disposition of SIGHUP,
// which is "ignored" when the tests run under nohup(1).)
func TestMain(m *testing.M) {
	if os.Getenv("RCD_TEST_AWAIT_HUP") == "1" {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		fmt.Println("ready")
		select {
		case <-hup:
			os.Exit(0)
		case <-time.After(time.Minute):
			os.Exit(3)
		}
	}
	// Every colibri these tests start (make install's, check --probe of
	// the installed sample) keeps its pins and state in a folder of the
	// run's, never the machine's /var/db/colibri.
	dir := testbuild.MustDir()
	checkState := testbuild.IsolatePins(dir)
	code := m.Run()
	if err := checkState(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// rcEnv is rc.d/colibri_mcp made runnable here: its fixed paths point into a
// temporary tree, /etc/rc.subr is the stub in testdata, and daemon(8), su(1)
// and colibri-mcp are fakes that record how they were called.
type rcEnv struct {
	dir, script, conf string
}

func newRCEnv(t *testing.T, rcConf string) *rcEnv {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"bin", "run", "log", "etc"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	stub, _ := filepath.Abs("testdata/rc.subr.d/rc.subr")
	src, err := os.ReadFile("rc.d/colibri_mcp")
	if err != nil {
		t.Fatal(err)
	}
	script := strings.NewReplacer(
		"/etc/rc.subr", stub,
		"/usr/sbin/daemon", filepath.Join(dir, "bin/daemon"),
		"/usr/local/bin/colibri-mcp", filepath.Join(dir, "bin/colibri-mcp"),
		"/usr/local/etc/colibri/", filepath.Join(dir, "etc")+"/",
		"/var/run/", filepath.Join(dir, "run")+"/",
		"/var/log/", filepath.Join(dir, "log")+"/",
		"/var/db/", filepath.Join(dir, "db")+"/",
		// prestart's PATH: the fakes first.
		`PATH="/usr/local/sbin:`, `PATH="`+filepath.Join(dir, "bin")+`:/usr/local/sbin:`,
	).Replace(string(src))
	e := &rcEnv{dir: dir, script: filepath.Join(dir, "colibri_mcp"), conf: filepath.Join(dir, "rc.conf")}
	write := func(path, text string, mode os.FileMode) {
		if err := os.WriteFile(path, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(e.script, script, 0o755)
	write(e.conf, rcConf, 0o644)
	// Each fake writes its arguments one per line, then FOO (from the env
	// file), and its name to the calls file, in the order they ran.
	record := func(name, then string) {
		write(filepath.Join(dir, "bin", name), "#!/bin/sh\n"+
			`echo `+name+` >> "`+filepath.Join(dir, "calls")+"\"\n"+
			`for a in "$@"; do printf '%s\n' "$a"; done > "`+filepath.Join(dir, name+".argv")+"\"\n"+
			`printf '%s\n' "${FOO-unset}" > "`+filepath.Join(dir, name+".foo")+"\"\n"+then+"\n", 0o755)
	}
	record("daemon", "exit 0")
	record("su", "exit 0")
	record("colibri-mcp", `exit "${FAKE_CHECK_EXIT:-0}"`)
	// install(1) -d makes the folder (the owner is the test's user: -o
	// needs a user the machine may not have); getent(1) knows the run-as
	// user, whose HOME is $FAKE_HOME.
	record("install", `for last in "$@"; do :; done; if [ "$1" = -d ]; then mkdir -p "$last" && chmod 0700 "$last"; fi`)
	record("getent", `printf '%s:*:1001:1001::%s:/usr/sbin/nologin\n' "$2" "${FAKE_HOME:-/nonexistent}"`)
	// The log exists: creating it would need the service's user.
	write(filepath.Join(dir, "log/colibri_mcp.log"), "", 0o640)
	return e
}

// run runs the script with arg; extra is added to the environment.
func (e *rcEnv) run(t *testing.T, arg string, extra ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("/bin/sh", e.script, arg)
	cmd.Env = append([]string{"PATH=" + filepath.Join(e.dir, "bin") + ":/usr/bin:/bin",
		"RC_STUB_CONF=" + e.conf, "RC_STUB_DOIT=" + filepath.Join(e.dir, "doit")}, extra...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

func (e *rcEnv) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(e.dir, name))
	return string(b)
}

func (e *rcEnv) argv(name string) []string {
	return strings.Split(strings.TrimSuffix(e.read(name+".argv"), "\n"), "\n")
}

// The start command, as rc.subr(8) builds it: daemon(8) run as root (no su)
// with its own options first, dropping to colibri_mcp_runas with -u, and
// colibri-mcp's arguments after colibri-mcp.
func TestRCDStartCommand(t *testing.T) {
	e := newRCEnv(t, `colibri_mcp_enable="YES"
colibri_mcp_runas="mcp"
colibri_mcp_token_file="/usr/local/etc/colibri/tokens"
colibri_mcp_args="--external-call --log-format json"
`)
	os.WriteFile(filepath.Join(e.dir, "rc.conf"), []byte(e.read("rc.conf")+"colibri_mcp_env_file=\""+filepath.Join(e.dir, "etc/provider.env")+"\"\n"), 0o644)
	os.WriteFile(filepath.Join(e.dir, "etc/provider.env"), []byte("FOO=from-env-file\n"), 0o600)
	_, stderr, err := e.run(t, "start")
	if err != nil || stderr != "" {
		t.Fatalf("start: %v: %s", err, stderr)
	}
	d := func(p string) string { return filepath.Join(e.dir, p) }
	want := []string{"-f", "-r", "-R", "5", "-P", d("run/colibri_mcp_daemon.pid"), "-p", d("run/colibri_mcp.pid"),
		"-H", "-o", d("log/colibri_mcp.log"), "-t", "colibri_mcp", "-u", "mcp",
		d("bin/colibri-mcp"), "serve", "--http", "127.0.0.1:8750", "--external-config", d("etc/external-mcp.json"),
		"--token-file", "/usr/local/etc/colibri/tokens", "--state-dir", d("db/colibri"), "--external-call", "--log-format", "json"}
	if got := e.argv("daemon"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("daemon(8) ran as\n  %q\nwant\n  %q", got, want)
	}
	if doit := e.read("doit"); !strings.HasPrefix(doit, d("bin/daemon")+" ") {
		t.Errorf("the start command is %q: it must be daemon(8) itself, not through su", doit)
	}
	if e.read("su.argv") != "" {
		t.Errorf("su(1) was run: %q", e.read("su.argv"))
	}
	// colibri_mcp_env_file reached the service, and the check before start.
	if got := strings.TrimSpace(e.read("daemon.foo")); got != "from-env-file" {
		t.Errorf("FOO in the service's environment: %q", got)
	}
	// The check runs as root, with a scratch state folder of root's (the
	// service's own is colibri_mcp_runas's), removed after it.
	if got := e.argv("colibri-mcp"); len(got) != 5 || strings.Join(got[:3], " ") != "--external-config "+d("etc/external-mcp.json")+" --state-dir" || got[4] != "check" {
		t.Errorf("start_precmd ran colibri-mcp %q, want a check of the registry", got)
	} else if _, err := os.Stat(got[3]); err == nil {
		t.Errorf("the check's scratch folder %s is left", got[3])
	}
	if got := strings.TrimSpace(e.read("colibri-mcp.foo")); got != "from-env-file" {
		t.Errorf("the check ran without the env file: FOO=%q", got)
	}
}

// A registry that fails check is reported when starting; the service starts
// anyway (every tool then says what is wrong).
// required_files: without the binary, rc.subr refuses to start, and
// daemon(8) is never run (it would restart a missing program every 5 s).
func TestRCDRequiresTheBinary(t *testing.T) {
	e := newRCEnv(t, "colibri_mcp_enable=\"YES\"\n")
	os.Remove(filepath.Join(e.dir, "bin/colibri-mcp"))
	_, stderr, err := e.run(t, "start")
	if err == nil || !strings.Contains(stderr, "bin/colibri-mcp is not readable") {
		t.Errorf("start without the binary: %v, %q", err, stderr)
	}
	if e.read("daemon.argv") != "" {
		t.Error("daemon(8) ran without the binary")
	}
}

func TestRCDStartWarnsWhenCheckFails(t *testing.T) {
	e := newRCEnv(t, "colibri_mcp_enable=YES\n")
	_, stderr, err := e.run(t, "start", "FAKE_CHECK_EXIT=2")
	if err != nil {
		t.Fatalf("start: %v: %s", err, stderr)
	}
	if !strings.Contains(stderr, "WARNING") || !strings.Contains(stderr, "external-mcp.json has problems") || !strings.Contains(stderr, "check") {
		t.Errorf("stderr %q: want a warning naming the registry and the check to run", stderr)
	}
	if e.read("daemon.argv") == "" {
		t.Error("the service did not start")
	}
}

// An rc.conf written for the old script (colibri_mcp_user, colibri_mcp_flags)
// is warned about and taken over: rc.subr never sees them.
func TestRCDOldVariables(t *testing.T) {
	e := newRCEnv(t, `colibri_mcp_enable=YES
colibri_mcp_user=mcp
colibri_mcp_flags="--external-call"
`)
	_, stderr, err := e.run(t, "start")
	if err != nil {
		t.Fatalf("start: %v: %s", err, stderr)
	}
	for _, w := range []string{"colibri_mcp_user is obsolete: use colibri_mcp_runas", "colibri_mcp_flags is obsolete: use colibri_mcp_args"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
	got := e.argv("daemon")
	if got[0] != "-f" || got[len(got)-1] != "--external-call" || !strings.Contains(strings.Join(got, " "), "-u mcp ") {
		t.Errorf("daemon(8) ran as %q", got)
	}
	if e.read("su.argv") != "" {
		t.Errorf("su(1) was run: %q", e.read("su.argv"))
	}
}

// The stub is faithful where it matters: it wraps a _user script in su and
// hands _flags to $command, as rc.subr(8) does.
func TestRCSubrStubModelsUserAndFlags(t *testing.T) {
	e := newRCEnv(t, "")
	script := filepath.Join(e.dir, "naive")
	stub, _ := filepath.Abs("testdata/rc.subr.d/rc.subr")
	os.WriteFile(script, []byte(". "+stub+"\nname=naive\nrcvar=naive_enable\nnaive_enable=YES\nnaive_user=mcp\nnaive_flags=--external-call\n"+
		"command="+filepath.Join(e.dir, "bin/daemon")+"\ncommand_args=\"-u mcp /usr/local/bin/colibri-mcp serve\"\nrun_rc_command start\n"), 0o755)
	e.script = script
	if _, stderr, err := e.run(t, "start"); err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	want := "su -m mcp -c 'sh -c \"" + filepath.Join(e.dir, "bin/daemon") + " --external-call -u mcp /usr/local/bin/colibri-mcp serve\"'"
	if got := strings.TrimSpace(e.read("doit")); got != want {
		t.Errorf("the stub built\n  %s\nwant\n  %s", got, want)
	}
}

// reload signals colibri-mcp itself, found through check_pidfile, and says
// so when it is not running.
func TestRCDReload(t *testing.T) {
	e := newRCEnv(t, "colibri_mcp_enable=YES\n")
	if stdout, _, err := e.run(t, "reload"); err == nil || !strings.Contains(stdout, "not running") {
		t.Errorf("reload with no pidfile: %v, %q; want a failure saying it is not running", err, stdout)
	}
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "RCD_TEST_AWAIT_HUP=1")
	out, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the stand-in process said %q, want ready", line)
	}
	os.WriteFile(filepath.Join(e.dir, "run/colibri_mcp.pid"), []byte(strconv.Itoa(child.Process.Pid)+"\n"), 0o644)
	if _, stderr, err := e.run(t, "reload"); err != nil {
		t.Fatalf("reload: %v: %s", err, stderr)
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	select {
	case <-done:
		if code := child.ProcessState.ExitCode(); code != 0 {
			t.Errorf("the process ended with %v, want its exit on SIGHUP", child.ProcessState)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reload sent nothing to the pid in the pidfile")
	}
}

// The audit log and metrics knobs become colibri-mcp's flags; unset, they
// add nothing.
func TestRCDAuditAndMetricsKnobs(t *testing.T) {
	e := newRCEnv(t, "")
	d := func(p string) string { return filepath.Join(e.dir, p) }
	os.WriteFile(e.conf, []byte(`colibri_mcp_enable="YES"
colibri_mcp_audit_log="`+d("log/colibri_mcp_audit.log")+`"
colibri_mcp_audit_key_file="`+d("etc/audit.key")+`"
colibri_mcp_metrics_addr="127.0.0.1:9750"
`), 0o644)
	// The audit log exists: creating it would need the service's user.
	os.WriteFile(d("log/colibri_mcp_audit.log"), nil, 0o600)
	if _, stderr, err := e.run(t, "start"); err != nil || stderr != "" {
		t.Fatalf("start: %v: %s", err, stderr)
	}
	argv := strings.Join(e.argv("daemon"), " ")
	want := "serve --http 127.0.0.1:8750 --external-config " + d("etc/external-mcp.json") +
		" --audit-log " + d("log/colibri_mcp_audit.log") + " --audit-key-file " + d("etc/audit.key") + " --metrics-addr 127.0.0.1:9750" +
		" --state-dir " + d("db/colibri")
	if !strings.HasSuffix(argv, want) {
		t.Errorf("daemon(8) ran as\n  %s\nwant it to end with\n  %s", argv, want)
	}
	plain := newRCEnv(t, "colibri_mcp_enable=YES\n")
	if _, stderr, err := plain.run(t, "start"); err != nil {
		t.Fatalf("start: %v: %s", err, stderr)
	}
	if argv := strings.Join(plain.argv("daemon"), " "); strings.Contains(argv, "--audit") || strings.Contains(argv, "--metrics") {
		t.Errorf("unset knobs added flags: %s", argv)
	}
}

// newsyslog rotates the audit log at the path rc.d suggests, mode 600, and
// signals colibri-mcp itself (the child's pidfile, which rc.d writes) with
// SIGHUP, which makes it reopen the log.
func TestNewsyslogAuditLine(t *testing.T) {
	conf, err := os.ReadFile("etc/newsyslog.conf.d/colibri_mcp.conf")
	if err != nil {
		t.Fatal(err)
	}
	rcd, _ := os.ReadFile("rc.d/colibri_mcp")
	var fields []string
	for _, line := range strings.Split(string(conf), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "/var/log/colibri_mcp_audit.log" {
			fields = f
		}
	}
	if len(fields) != 9 {
		t.Fatalf("no well-formed audit log line: %q", fields)
	}
	if fields[2] != "600" || fields[7] != "/var/run/colibri_mcp.pid" || fields[8] != "1" {
		t.Errorf("audit line %q: want mode 600, the child's pidfile, SIGHUP", fields)
	}
	// newsyslog.conf(5): C creates the log when missing, an empty audit log
	// while auditing is off.
	if strings.Contains(fields[6], "C") {
		t.Errorf("audit line flags %q: C would create an empty audit log when auditing is off", fields[6])
	}
	// B: no turnover line in a file that holds a hash chain of audit lines.
	if !strings.Contains(fields[6], "B") {
		t.Errorf("audit line flags %q: without B newsyslog writes a line into the audit log", fields[6])
	}
	if !strings.Contains(string(rcd), `child_pidfile="/var/run/${name}.pid"`) || !strings.Contains(string(rcd), "/var/log/colibri_mcp_audit.log") {
		t.Error("rc.d/colibri_mcp no longer writes the pidfile newsyslog signals, or suggests another audit log path")
	}
}

// The state folder (docs/freebsd.md): prestart makes a missing one, 0700
// and owned by colibri_mcp_runas, before daemon(8) starts, and passes
// --state-dir; colibri_mcp_state_dir moves it; provider.env naming a folder
// or a pin file of its own wins (no folder made, no flag).
func TestRCDStateDir(t *testing.T) {
	e := newRCEnv(t, "colibri_mcp_enable=YES\ncolibri_mcp_runas=mcp\n")
	d := func(p string) string { return filepath.Join(e.dir, p) }
	if _, stderr, err := e.run(t, "start"); err != nil {
		t.Fatalf("start: %v: %s", err, stderr)
	}
	if got := strings.Join(e.argv("install"), " "); got != "-d -o mcp -m 0700 "+d("db/colibri") {
		t.Errorf("install ran as %q", got)
	}
	if calls := strings.Fields(e.read("calls")); slices.Index(calls, "install") < 0 || slices.Index(calls, "install") > slices.Index(calls, "daemon") {
		t.Errorf("the folder was not made before daemon(8) started: %q", calls)
	}
	if fi, err := os.Stat(d("db/colibri")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the state folder: %v %v", fi, err)
	}
	if argv := strings.Join(e.argv("daemon"), " "); !strings.Contains(argv, " --state-dir "+d("db/colibri")) {
		t.Errorf("daemon(8) ran as %s", argv)
	}

	moved := newRCEnv(t, "colibri_mcp_enable=YES\ncolibri_mcp_runas=mcp\ncolibri_mcp_state_dir="+filepath.Join(t.TempDir(), "state")+"\n")
	if _, stderr, err := moved.run(t, "start"); err != nil {
		t.Fatalf("start: %v: %s", err, stderr)
	}
	if argv := strings.Join(moved.argv("daemon"), " "); !strings.Contains(argv, "/state") || strings.Contains(argv, "db/colibri") {
		t.Errorf("colibri_mcp_state_dir did not move the folder: %s", argv)
	}

	for _, v := range []string{"COLIBRI_MCP_STATE_DIR=/srv/colibri", "COLIBRI_MCP_PIN_FILE=/usr/local/etc/colibri/pins.lock"} {
		own := newRCEnv(t, "colibri_mcp_enable=YES\ncolibri_mcp_runas=mcp\n")
		os.WriteFile(own.conf, []byte(own.read("rc.conf")+"colibri_mcp_env_file=\""+filepath.Join(own.dir, "etc/provider.env")+"\"\n"), 0o644)
		os.WriteFile(filepath.Join(own.dir, "etc/provider.env"), []byte(v+"\n"), 0o600)
		if _, stderr, err := own.run(t, "start"); err != nil {
			t.Fatalf("%s: start: %v: %s", v, err, stderr)
		}
		if argv := strings.Join(own.argv("daemon"), " "); strings.Contains(argv, "--state-dir") || own.read("install.argv") != "" {
			t.Errorf("%s in provider.env: daemon(8) ran as %s; install %q", v, argv, own.read("install.argv"))
		}
	}
}

// An existing state folder that is someone else's is refused with the
// chown to run, never changed; one that is colibri_mcp_runas's is used as
// it is. A new folder while the run-as user's former default holds pins is
// refused with the mv to run: the service never starts with no pins.
func TestRCDStateDirRefusals(t *testing.T) {
	e := newRCEnv(t, "colibri_mcp_enable=YES\ncolibri_mcp_runas=mcp\n")
	dir := filepath.Join(e.dir, "db/colibri")
	os.MkdirAll(dir, 0o700) // the test's user's, not mcp's
	_, stderr, err := e.run(t, "start")
	if err == nil || !strings.Contains(stderr, "run 'chown -R mcp "+dir) || e.read("daemon.argv") != "" {
		t.Errorf("a folder of another user: %v %q; daemon %q", err, stderr, e.read("daemon.argv"))
	}
	if e.read("install.argv") != "" {
		t.Errorf("install ran on another user's folder: %q", e.read("install.argv"))
	}

	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	mine := newRCEnv(t, "colibri_mcp_enable=YES\ncolibri_mcp_runas="+me.Username+"\n")
	os.MkdirAll(filepath.Join(mine.dir, "db/colibri"), 0o700)
	if _, stderr, err := mine.run(t, "start"); err != nil || !strings.Contains(strings.Join(mine.argv("daemon"), " "), "--state-dir") {
		t.Errorf("the run-as user's own folder: %v %q", err, stderr)
	}

	home := t.TempDir()
	old := filepath.Join(home, ".local/state/colibri-mcp")
	os.MkdirAll(filepath.Join(old, "oauth"), 0o700)
	os.WriteFile(filepath.Join(old, "pins.json"), []byte("{}"), 0o600)
	up := newRCEnv(t, "colibri_mcp_enable=YES\ncolibri_mcp_runas=mcp\n")
	newDir := filepath.Join(up.dir, "db/colibri")
	_, stderr, err = up.run(t, "start", "FAKE_HOME="+home)
	want := "mv " + filepath.Join(old, "pins.json") + " " + filepath.Join(old, "oauth") + " " + newDir + "/"
	if err == nil || !strings.Contains(stderr, want) || up.read("daemon.argv") != "" {
		t.Errorf("pins under the former default: %v %q (want %q); daemon %q", err, stderr, want, up.read("daemon.argv"))
	}
	// Once moved, it starts.
	os.MkdirAll(newDir, 0o700)
	os.Rename(filepath.Join(old, "pins.json"), filepath.Join(newDir, "pins.json"))
	os.Rename(filepath.Join(old, "oauth"), filepath.Join(newDir, "oauth"))
	up.write(t, "rc.conf", "colibri_mcp_enable=YES\ncolibri_mcp_runas="+me.Username+"\n")
	if _, stderr, err := up.run(t, "start", "FAKE_HOME="+home); err != nil {
		t.Errorf("after the mv: %v %q", err, stderr)
	}
}

func (e *rcEnv) write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A state folder or run-as user that rc.subr's word splitting would tear
// apart (command_args is split on blanks) or that a command would read as
// an option is refused with its name, before anything is made or started.
func TestRCDStateDirOddNames(t *testing.T) {
	for _, conf := range []string{
		"colibri_mcp_runas=mcp\ncolibri_mcp_state_dir='/var/db/my colibri'\n",
		"colibri_mcp_runas='-mcp'\n",
		"colibri_mcp_runas='mcp x'\n",
	} {
		e := newRCEnv(t, "colibri_mcp_enable=YES\n"+conf)
		_, stderr, err := e.run(t, "start")
		if err == nil || e.read("daemon.argv") != "" || e.read("install.argv") != "" {
			t.Errorf("%q: %v %q; daemon %q; install %q", conf, err, stderr, e.read("daemon.argv"), e.read("install.argv"))
		}
		if !strings.Contains(stderr, "colibri_mcp_state_dir") && !strings.Contains(stderr, "colibri_mcp_runas") {
			t.Errorf("%q: the refusal names no setting: %q", conf, stderr)
		}
	}
}
