package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
)

// Serving its own stdio, a colibri process reads it through the runtime's
// poller (stdioserve.Pollable: its stdin's open file in non-blocking mode
// while it serves, blocking again once it has ended; docs/benchmarks.md,
// "The serve --only hop").
func TestServeOwnStdio(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		t.Skip("macOS keeps a pipe stdin in blocking mode (stdioserve's pollable_darwin.go)")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	inFD := inR.Fd() // blocking, as an editor's spawn leaves a child's stdin
	nonblocking := func() bool {
		flags, err := unix.FcntlInt(inFD, unix.F_GETFL, 0)
		if err != nil {
			t.Fatal(err)
		}
		return flags&unix.O_NONBLOCK != 0
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	cmd := exec.Command(colibriBin, "serve", "--external-config", writeRegistry(t, nil))
	cmd.Env = []string{pinEnv(t), "PATH=" + os.Getenv("PATH")}
	var stderr syncbuf.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-done
	}()
	if _, err := inW.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(outR).ReadString('\n'); err != nil || !strings.Contains(line, `"serverInfo":{"name":"colibri-mcp"`) {
		t.Fatalf("stdout %q (%v): want an MCP initialize answer\n%s", line, err, stderr.String())
	}
	if !nonblocking() {
		t.Error("serving, colibri's stdin is in blocking mode: its reads hold a thread")
	}
	inW.Close()
	select {
	case err := <-done:
		done <- err
		if err != nil {
			t.Fatalf("serve ended with %v: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not end after its stdin closed")
	}
	if nonblocking() {
		t.Error("colibri left its stdin in non-blocking mode: a process that shares it would read EAGAIN")
	}
}
