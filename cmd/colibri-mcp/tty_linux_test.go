package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
)

// openPty opens a pseudo-terminal: what the program gets is the terminal
// side (tty); the test is the person at the keyboard (ptmx).
func openPty(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}

// Typed in a shell, serve says on stderr that it waits for an MCP client
// (rather than seeming to hang), and Ctrl-D ends it.
func TestServeInATerminalSaysItWaits(t *testing.T) {
	ptmx, tty := openPty(t)
	reg := writeRegistry(t, nil)
	var stdout, stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), []string{"colibri-mcp", "--external-config", reg}, tty, &stdout, &stderr, []string{pinEnv(t)})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "waiting for an MCP client") {
		if time.Now().After(deadline) {
			t.Fatalf("stderr %q: no word that serve waits for a client", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	ptmx.Write([]byte{4}) // Ctrl-D: end of input
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve after Ctrl-D: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not end on Ctrl-D")
	}
	if stdout.String() != "" {
		t.Errorf("stdout %q: only MCP belongs there", stdout.String())
	}
}

// When stderr is a terminal, call shows the hosted server's progress there.
func TestCallShowsProgressOnATerminal(t *testing.T) {
	ptmx, tty := openPty(t)
	var screen syncbuf.Buffer
	go io.Copy(&screen, ptmx)
	reg := writeRegistry(t, nil)
	var stdout syncbuf.Buffer
	err := run(t.Context(), []string{"colibri-mcp", "--external-config", reg, "--external-call", "call", "demo", "slow", "--args", `{"steps":3,"interval_ms":1}`},
		strings.NewReader(""), &stdout, tty, append(os.Environ(), pinEnv(t), "E2E_SECRET=x"))
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(screen.String(), "progress: 3/3") {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal shows %q: no progress", screen.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(stdout.String(), "progress") {
		t.Errorf("progress went to stdout: %q", stdout.String())
	}
	// Not a terminal: no progress written.
	code, _, stderr := runHere(t, nil, "--external-config", reg, "--external-call", "call", "demo", "slow", "--args", `{"steps":2,"interval_ms":1}`)
	if code != 0 || strings.Contains(stderr, "progress") {
		t.Errorf("exit %d: stderr %q holds progress, but is not a terminal", code, stderr)
	}
}

// A hosted server never gets colibri's controlling terminal: run from a
// shell (a real terminal on colibri's stdin, stdout and stderr), a server
// that opens /dev/tty to type into the user's shell (TIOCSTI) finds none.
// The same fake, run straight on that terminal, can: so the test can fail.
func TestHostedServerHasNoTerminal(t *testing.T) {
	ptmx, tty := openPty(t)
	go io.Copy(io.Discard, ptmx) // the screen: drain it
	dir := t.TempDir()
	inTerminal := func(report string, argv ...string) {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
		cmd.Env = []string{"PATH=/usr/bin:/bin", "FAKEMCP_REPORT=" + report, "COLIBRI_MCP_PIN_FILE=" + filepath.Join(dir, "pins.json")}
		// A session led by the command, with tty as its controlling terminal:
		// as a login shell runs what the user types.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		if err := cmd.Run(); err != nil {
			var exit *exec.ExitError
			if !errors.As(err, &exit) { // a fake that serves ends on its own here
				t.Fatalf("%v: %v", argv, err)
			}
		}
	}
	control := filepath.Join(dir, "control")
	inTerminal(control, fakeBin, "tty-probe")
	if b, _ := os.ReadFile(control); !strings.HasPrefix(string(b), "opened the tty") {
		t.Fatalf("control: the fake on a terminal could not open it (%q): the test proves nothing here", b)
	}

	hosted := filepath.Join(dir, "hosted")
	b, _ := json.Marshal(map[string]any{"servers": map[string]any{"tty": map[string]any{
		"command": fakeBin, "args": []string{"tty"}, "env": map[string]any{"FAKEMCP_REPORT": hosted}}}})
	reg := filepath.Join(dir, "external-mcp.json")
	os.WriteFile(reg, b, 0o644)
	inTerminal("", colibriBin, "--external-config", reg, "list-tools", "tty")
	got, err := os.ReadFile(hosted)
	if err != nil {
		t.Fatalf("the hosted fake reported nothing: %v", err)
	}
	if !strings.HasPrefix(string(got), "no tty: ") {
		t.Errorf("the hosted server reached colibri's terminal: %q", got)
	}
}
