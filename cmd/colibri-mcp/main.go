// Command colibri-mcp is an MCP server that hosts other stdio MCP servers
// listed in a JSON registry. Editors register it over stdio; operators run it
// as a FreeBSD service over Streamable HTTP.
//
//	colibri-mcp                      # serve MCP over stdio (what editors run)
//	colibri-mcp serve --http 127.0.0.1:8750
//	colibri-mcp servers | list-tools [SERVER] | call SERVER TOOL --args '{…}' | check [--probe]
//
// See README.md and docs/ for the registry format and the service.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/colibri-mcp/colibri-mcp/internal/proc"
	_ "github.com/colibri-mcp/colibri-mcp/internal/sandbox/early" // the launcher, before other packages initialize
)

// Set by the Makefile with -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	// colibri re-executed as the sandbox launcher never gets here: the
	// init of internal/sandbox/early (imported below) confines it and execs
	// the server first, before most of colibri's packages initialize.
	harden()
	ctx, stop := stopOnSignal()
	err := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr, os.Environ())
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// stopOnSignal returns a context that SIGINT or SIGTERM ends: a graceful
// stop, calls in flight finishing (bounded). A second signal ends colibri at
// once (CONTRACT, section 7): it is raised again with the signals' default
// action back, and the kernel then ends the hosted servers (Pdeathsig). (The
// handler stays registered until the second signal has been received:
// restoring the default action right after the first would drop a second
// signal that os/signal had already queued.)
func stopOnSignal() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sig:
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sig:
			signal.Reset(os.Interrupt, syscall.SIGTERM)
			syscall.Kill(os.Getpid(), s.(syscall.Signal))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sig)
		close(done)
		cancel()
	}
}

// hardening is what harden could not do, for serve to log once it has a
// logger.
var hardening []string

// harden makes colibri's own process unreadable to the servers it hosts
// (their environment reads and ptrace fail) and the reaper of everything they
// start, so that no descendant outlives its request. Only main does this: it
// changes the whole process, which in-process tests must not.
func harden() {
	if err := proc.ProtectSelf(); err != nil {
		hardening = append(hardening, "cannot make colibri's process non-dumpable: hosted servers of the same user may read its environment: "+err.Error())
	}
	if err := proc.AcquireReaper(); err != nil {
		hardening = append(hardening, "cannot become the reaper of hosted servers' processes: a descendant that leaves its server's process group may outlive its request: "+err.Error())
	}
}

// Exit codes (docs/cli.md#exit-codes).
const (
	exitOK     = 0
	exitFailed = 1 // the operation ran and failed
	exitUsage  = 2 // usage or configuration error

	exitInterrupted = 130 // a one-shot command ended by SIGINT (128 + 2), as shells report it
)

// exitError carries an exit code; its message (if any) was not yet printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func failed(err error) error { return &exitError{code: exitFailed, err: err} }
func usage(err error) error  { return &exitError{code: exitUsage, err: err} }

// silent is an exit code whose reason the command already printed.
func silent(code int) error { return &exitError{code: code} }

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "colibri-mcp:", ee.err)
		}
		return ee.code
	}
	// Anything else comes from flag parsing: a usage error.
	fmt.Fprintln(stderr, "colibri-mcp:", err)
	return exitUsage
}
