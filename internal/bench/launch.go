package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// instance is a colibri-mcp serve process that a row drives: over stdio
// (cs is its one client session) or Streamable HTTP (url, for as many
// sessions as the row opens), with its metrics listener.
type instance struct {
	cmd        *exec.Cmd
	pid        int
	cs         *mcp.ClientSession // stdio: the session; HTTP: nil
	url        string             // HTTP: http://…/mcp
	metricsURL string
	stop       func()
}

var metricsRE = regexp.MustCompile(`url=(http://\S+/metrics)`)

// launch starts colibri serving servers (a registry's "servers") over face
// ("stdio" or "http"), with metrics, the call gate on and args added.
func launch(colibri string, servers map[string]any, face string, env []string, args ...string) (*instance, error) {
	reg, removeReg, err := registryFile(servers)
	if err != nil {
		return nil, err
	}
	env = append(append(append([]string(nil), env...), colibriEnv...), pinEnv, stateEnv) // the bench's own pin file
	argv := append([]string{"serve", "--external-config", reg, "--external-call", "--log-level", "info",
		"--metrics-addr", "127.0.0.1:0"}, args...)
	if face == "http" {
		argv = append(argv, "--http", "127.0.0.1:0")
	}
	cmd := exec.Command(colibri, argv...)
	cmd.Env = env
	errR, errW := io.Pipe()
	cmd.Stderr = errW
	found := make(chan [2]string, 1)
	go func() { // colibri's log: the addresses it listens on, then discarded
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var u, m string
		tell := found
		for sc.Scan() {
			if x := urlRE.FindStringSubmatch(sc.Text()); x != nil {
				u = x[1]
			}
			if x := metricsRE.FindStringSubmatch(sc.Text()); x != nil {
				m = x[1]
			}
			if m != "" && (u != "" || face != "http") && tell != nil {
				tell <- [2]string{u, m}
				tell = nil
			}
		}
	}()
	in := &instance{cmd: cmd}
	if face == "stdio" {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, noCaps)
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			removeReg()
			return nil, fmt.Errorf("starting colibri: %w", err)
		}
		in.cs = cs
		in.stop = func() { cs.Close(); errW.Close(); removeReg() }
	} else {
		if err := cmd.Start(); err != nil {
			removeReg()
			return nil, err
		}
		in.stop = func() { cmd.Process.Signal(os.Interrupt); cmd.Wait(); errW.Close(); removeReg() }
	}
	in.pid = cmd.Process.Pid
	select {
	case a := <-found:
		in.url, in.metricsURL = a[0], a[1]
	case <-time.After(20 * time.Second):
		in.stop()
		return nil, fmt.Errorf("colibri did not say where it listens")
	}
	return in, nil
}

// session opens a client session to an HTTP instance.
func (in *instance) session(hc *http.Client) (*mcp.ClientSession, error) {
	if hc == nil {
		hc = &http.Client{}
	}
	return mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, noCaps).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: in.url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// metric reads one sample of the instance's metrics ("name{labels}"), 0
// when absent.
func (in *instance) metric(series string) float64 {
	resp, err := http.Get(in.metricsURL)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// cpuTime is the CPU time (user + system) a process has used, from its own
// counters (/proc/PID/stat, fields 14 and 15, in clock ticks of 1/100 s).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after "pid (comm) "
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

// timed runs f and returns how long it took, failing on an error result.
func timed(f func() (*mcp.CallToolResult, error)) (time.Duration, error) {
	start := time.Now()
	res, err := f()
	d := time.Since(start)
	if err == nil && res.IsError {
		err = fmt.Errorf("isError: %v", contentText(res))
	}
	return d, err
}

func contentText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// callVia is a call-tool of server's tool through a colibri session.
func callVia(cs *mcp.ClientSession, server, tool string, args map[string]any) func() (*mcp.CallToolResult, error) {
	return func() (*mcp.CallToolResult, error) {
		return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
			Arguments: map[string]any{"server": server, "name": tool, "arguments": args}})
	}
}

// drive runs sessions that each call f back to back for d, and returns every
// call's latency and the failures.
func drive(sessions []*mcp.ClientSession, d time.Duration, f func(cs *mcp.ClientSession) (*mcp.CallToolResult, error)) ([]time.Duration, int) {
	var mu sync.Mutex
	var lat []time.Duration
	failures := 0
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for _, cs := range sessions {
		wg.Go(func() {
			var mine []time.Duration
			bad := 0
			for time.Now().Before(end) {
				x, err := timed(func() (*mcp.CallToolResult, error) { return f(cs) })
				if err != nil {
					bad++
					continue
				}
				mine = append(mine, x)
			}
			mu.Lock()
			lat = append(lat, mine...)
			failures += bad
			mu.Unlock()
		})
	}
	wg.Wait()
	return lat, failures
}
