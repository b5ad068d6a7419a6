package main

//lint:file-ignore SA1019 the test drives the logging that colibri relays on purpose.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/testbuild"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// cpuOf is the CPU time process pid has used so far (utime + stime, from
// /proc/PID/stat), not the wall clock.
func cpuOf(t *testing.T, pid int) time.Duration {
	t.Helper()
	own, _ := cpuTimes(t, pid)
	return own
}

// cpuTimes is the CPU time process pid has used so far, and the CPU time
// of its children it has waited for (cutime + cstime: a reaped hosted
// server's, and its own children's that it reaped).
func cpuTimes(t *testing.T, pid int) (own, children time.Duration) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis start at the
	// third (state); utime and stime are the 14th and 15th, in clock ticks
	// of USER_HZ (100 a second on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var ticks [4]int64
	for i := range ticks {
		var err error
		if ticks[i], err = strconv.ParseInt(f[11+i], 10, 64); err != nil {
			t.Fatalf("reading /proc/%d/stat: %q", pid, b)
		}
	}
	tick := time.Second / 100
	return time.Duration(ticks[0]+ticks[1]) * tick, time.Duration(ticks[2]+ticks[3]) * tick
}

// A hosted server that sends 400,000 notifications during one call (half
// progress under the call's token, half log messages) costs colibri at
// most 6 times the CPU the server spends writing them (it cost 7.3 s
// before the relay was damped, some 25 times),
// and the caller still gets the result, with the last progress (400,000 of
// 400,000) before it, and one log line saying how many of the server's log
// messages were dropped.
func TestHostileNotificationFlood(t *testing.T) {
	bin := colibriBin
	if testbuild.Race {
		// The bound is colibri's as it ships: the race detector multiplies
		// the cost of every message several times over.
		var err error
		if bin, err = testbuild.Build(t.TempDir(), "colibri-mcp", testbuild.Module+"/cmd/colibri-mcp", false); err != nil {
			t.Fatal(err)
		}
	}
	reg := writeRegistry(t, registryDoc{"flood": fakeServer("notify-flood", "")})
	cmd := exec.Command(bin, "serve", "--external-config", reg, "--external-call", "--timeout", "60s")
	cmd.Env = append(os.Environ(), pinEnv(t))
	stderr := &lockedWriter{w: &strings.Builder{}}
	cmd.Stderr = stderr
	rec := &wireLog{Transport: &mcp.CommandTransport{Command: cmd}}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "flood", Version: "1"}, nil).Connect(ctx, rec, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	rec.take()
	pid := cmd.Process.Pid
	before, serverBefore := cpuTimes(t, pid)
	p := hostedCall("flood", "any", nil)
	p.SetProgressToken("flood")
	res, err := cs.CallTool(ctx, p)
	used := cpuOf(t, pid) - before
	// The flood's server ends with its request and is reaped: its CPU is
	// then in colibri's children's.
	var server time.Duration
	testwait.Eventually(t, "the flood's server to be reaped", func() bool {
		_, c := cpuTimes(t, pid)
		server = c - serverBefore
		return server > 0
	})
	if err != nil || res.IsError || textOf(res) != "flooded" {
		t.Fatalf("the flooded call: %v %+v\ncolibri's log:\n%s", err, res, stderr)
	}
	wire := rec.take()
	end := slices.Index(wire, "response")
	if end < 0 {
		t.Fatalf("no response on the wire")
	}
	var lastProgress, dropped string
	progress, logs := 0, 0
	for _, m := range wire[:end] {
		switch {
		case strings.HasPrefix(m, "progress "):
			progress++
			lastProgress = m
		case strings.HasPrefix(m, "log colibri ") && strings.Contains(m, "dropped"):
			dropped = m
		case strings.HasPrefix(m, "log "):
			logs++
		}
	}
	t.Logf("colibri used %v of CPU, the flood's server %v; the caller got %d progress and %d log notifications before the result; %q", used, server, progress, logs, dropped)
	if want := "progress flood 400000/400000 "; lastProgress != want {
		t.Errorf("the last progress before the result is %q, want %q", lastProgress, want)
	}
	// Every log message the server sent (200,000) was relayed or counted.
	var n int
	if _, after, ok := strings.Cut(dropped, "colibri dropped "); !ok {
		t.Errorf("no log line before the result says how many log messages were dropped")
	} else if _, err := fmt.Sscanf(after, "%d", &n); err != nil || logs+n != 200_000 {
		t.Errorf("%d log messages relayed and %q: want 200000 in all", logs, dropped)
	}
	// colibri logs it before it answers, but its stderr is read apart from
	// its stdout: wait for it.
	testwait.Eventually(t, "colibri's own log to say it dropped the server's log messages", func() bool {
		return strings.Contains(stderr.String(), "dropped log messages of the server")
	})
	// The bound is a multiple of the CPU the server spent writing the
	// flood, so that it holds on a slower or busier machine as on a fast
	// one. Measured: 4.2-4.6x on a 2-CPU VM, quiet and beside a CPU hog;
	// 5.0-5.2x on another, quiet; 6.2x once in a loaded make test, which
	// failed the 6x this bound was. What it guards is the cost of a message
	// colibri drops: decoded by go-sdk, as each once was, a message cost
	// colibri about 175 µs, over 200 times what the server spends writing
	// it. (A relay left undamped, 7.7x, fails on the counts above.)
	if used > 10*server {
		t.Errorf("the flood cost colibri %v of CPU, %.1fx what its server spent writing it (%v): want at most 10x", used, float64(used)/float64(server), server)
	}
}
