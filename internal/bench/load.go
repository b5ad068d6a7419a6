package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// load makes 100 concurrent call-tool requests to the demo server through
// one colibri session, over stdio and over HTTP, and reports latency and
// colibri's peak RSS.
func load(colibri, demo string, env []string) error {
	reg, cleanup, err := registryFile(map[string]any{"demo": map[string]any{"command": demo}})
	if err != nil {
		return err
	}
	defer cleanup()
	fmt.Printf("\nload: 100 concurrent call-tool requests to the demo server, 5 rounds, one session\n")
	fmt.Printf("%-7s %6s %9s %10s %10s %10s %14s\n", "via", "calls", "failures", "p50", "p99", "max", "colibri RSS")

	// stdio
	cmd := exec.Command(colibri, "serve", "--external-config", reg, "--external-call", "--log-level", "warn")
	env = append(append([]string(nil), env...), pinEnv, stateEnv)
	cmd.Env, cmd.Stderr = env, os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	report("stdio", cs, cmd.Process.Pid)
	cs.Close()

	// HTTP
	hcmd := exec.Command(colibri, "serve", "--http", "127.0.0.1:0", "--external-config", reg, "--external-call")
	hcmd.Env = env
	stderr, _ := hcmd.StderrPipe()
	if err := hcmd.Start(); err != nil {
		return err
	}
	defer hcmd.Process.Kill()
	url, err := listeningURL(stderr)
	if err != nil {
		return err
	}
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	report("http", cs, hcmd.Process.Pid)
	cs.Close()
	return nil
}

func report(via string, cs *mcp.ClientSession, pid int) {
	var lat []time.Duration
	failures := 0
	for range 5 {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				start := time.Now()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
					Arguments: map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": strconv.Itoa(i)}}})
				d := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				lat = append(lat, d)
				if err != nil || res.IsError {
					failures++
				}
			})
		}
		wg.Wait()
	}
	fmt.Printf("%-7s %6d %9d %10s %10s %10s %14s\n", via, len(lat), failures, ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), ms(quantile(lat, 1)), mib(proctable.Memory(pid, "VmHWM")))
}

var urlRE = regexp.MustCompile(`url=(http://\S+/mcp)`)

func listeningURL(stderr interface{ Read([]byte) (int, error) }) (string, error) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
			go func() {
				for sc.Scan() {
				}
			}()
			return m[1], nil
		}
	}
	return "", fmt.Errorf("colibri did not start listening")
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
