package main

// The chaos catalogue: hostile fake servers (this test binary re-run as a
// named fake), each run through the real colibri-mcp binary.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/procs"
)

// chaosEnv names the fake the test binary plays; chaosPidsEnv is a folder
// where every process of a fake records its pid.
const (
	chaosEnv     = "COLIBRI_E2E_CHAOS"
	chaosPidsEnv = "COLIBRI_E2E_CHAOS_PIDS"
)

func recordPid() {
	if dir := os.Getenv(chaosPidsEnv); dir != "" {
		os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), nil, 0o644)
	}
}

// spawnSleepers starts n copies of the test binary that ignore SIGTERM and
// hold stdout, as a careless or hostile server's children would.
func spawnSleepers(n int) {
	for range n {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), chaosEnv+"=sleeper")
		cmd.Stdout = os.Stdout
		cmd.Start()
	}
}

const (
	rawInit  = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
	rawTools = `{"tools":[{"name":"any","inputSchema":{"type":"object"}}]}`
)

// rawServe speaks just enough MCP by hand to misbehave precisely: handle
// gets each request's method and raw id.
func rawServe(handle func(method string, id json.RawMessage)) {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		handle(m.Method, m.ID)
	}
	time.Sleep(time.Hour) // never leave by itself
}

func rawReply(id json.RawMessage, result string) {
	fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
}

// rawHandshake answers initialize and tools/list, then passes the rest on.
func rawHandshake(then func(method string, id json.RawMessage)) func(string, json.RawMessage) {
	return func(method string, id json.RawMessage) {
		switch method {
		case "initialize":
			rawReply(id, rawInit)
		case "tools/list":
			rawReply(id, rawTools)
		default:
			then(method, id)
		}
	}
}

var chaosFakes = map[string]func(){
	// Answers calls, and leaves when its stdin closes.
	"polite": func() {
		s := mcp.NewServer(&mcp.Implementation{Name: "polite", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "any"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "polite"}}}, nil, nil
		})
		s.Run(context.Background(), &mcp.StdioTransport{})
	},
	// Answers calls, and stays when its stdin closes.
	"linger": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			rawReply(id, `{"content":[{"type":"text","text":"lingering"}]}`)
		}))
	},
	"sleeper": func() {
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		time.Sleep(time.Hour)
	},
	"hang-init": func() { rawServe(func(string, json.RawMessage) {}) },
	"hang-list": func() {
		rawServe(func(method string, id json.RawMessage) {
			if method == "initialize" {
				rawReply(id, rawInit)
			}
		})
	},
	"hang-call": func() { rawServe(rawHandshake(func(string, json.RawMessage) {})) },
	"exit-early": func() {
		fmt.Fprintln(os.Stderr, "fatal: no API key configured")
		os.Exit(3)
	},
	"exit-mid-call": func() {
		rawServe(rawHandshake(func(string, json.RawMessage) {
			fmt.Fprintln(os.Stderr, "segmentation fault")
			os.Exit(139)
		}))
	},
	"banner": func() {
		fmt.Println("Server v2.0 starting on stdio...")
		rawServe(rawHandshake(func(string, json.RawMessage) {}))
	},
	"stdout-flood": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			chunk := strings.Repeat("f", 1<<20)
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
			for range 100 {
				if _, err := os.Stdout.WriteString(chunk); err != nil {
					os.Exit(1)
				}
			}
		}))
	},
	"stderr-flood": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			line := strings.Repeat("e", 1023) + "\n"
			for range 50_000 { // 50 MB
				os.Stderr.WriteString(line)
			}
			rawReply(id, `{"content":[{"type":"text","text":"survived the flood"}]}`)
		}))
	},
	"invalid-jsonrpc": func() {
		rawServe(rawHandshake(func(string, json.RawMessage) {
			fmt.Println(`{"this":"is json","but":"not json-rpc"}`)
		}))
	},
	"wrong-ids": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			rawReply(json.RawMessage(`"not-`+strings.Trim(string(id), `"`)+`"`), `{"content":[]}`)
		}))
	},
	"drip": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"drip drip drip"}]}}`+"\n", id)
			for i := range len(msg) {
				os.Stdout.WriteString(msg[i : i+1])
				time.Sleep(100 * time.Millisecond)
			}
		}))
	},
	"close-stdout": func() {
		rawServe(rawHandshake(func(string, json.RawMessage) {
			os.Stdout.Close()
		}))
	},
	"no-stdin": func() {
		// Answers the handshake, then never reads stdin again.
		r := bufio.NewReader(os.Stdin)
		for n := 0; n < 2; {
			line, err := r.ReadBytes('\n')
			if err != nil {
				os.Exit(1)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &m) == nil && m.ID != nil {
				rawHandshake(func(string, json.RawMessage) {})(m.Method, m.ID)
				n++
			}
		}
		time.Sleep(time.Hour)
	},
	"grandchild": func() {
		spawnSleepers(1)
		rawServe(rawHandshake(func(string, json.RawMessage) {}))
	},
	"fork-storm": func() {
		spawnSleepers(50)
		rawServe(rawHandshake(func(string, json.RawMessage) {}))
	},
}

func TestChaosCatalogue(t *testing.T) {
	self, _ := os.Executable()
	pids := t.TempDir()
	const timeout = time.Second
	// The healthy server the rows are checked against keeps a timeout of its
	// own: moving 10 MB may take longer than the fakes' one second.
	servers := registryDoc{"demo": {"command": demoBin, "timeout_ms": 30000}}
	for name := range chaosFakes {
		servers[name] = map[string]any{"command": self, "env": map[string]any{chaosEnv: name, chaosPidsEnv: pids}}
	}
	cmd := exec.Command(colibriBin, "serve", "--external-config", writeRegistry(t, servers),
		"--external-call", "--timeout", timeout.String(), "--retry-backoff", "10ms")
	cmd.Env = append(os.Environ(), "E2E_SECRET=x")
	client := mcp.NewClient(&mcp.Implementation{Name: "chaos", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	colibriPid := cmd.Process.Pid

	next := func(t *testing.T) {
		t.Helper()
		res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": "next"}})
		if res.IsError || res.Content[0].(*mcp.TextContent).Text != "Echo: next" {
			t.Fatalf("the next request failed: %v", res.Content)
		}
	}
	next(t) // warm up: colibri's own fds settle
	baseFDs := procs.FDs(colibriPid)

	big := strings.Repeat("x", 10<<20)
	// Moving and decoding 10 MB costs time of its own (much more under the
	// race detector): the bound of the row that sends it starts after that.
	start := time.Now()
	if res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": big}}); res.IsError {
		t.Fatalf("10 MB to a healthy server: %v", res.Content)
	}
	bigCost := time.Since(start)
	cases := []struct {
		fake   string
		args   map[string]any
		kind   string
		phase  string
		stderr string
	}{
		{"hang-init", nil, "timeout", "initialize", ""},
		{"hang-list", nil, "timeout", "list", ""},
		{"hang-call", nil, "timeout", "call", ""},
		{"exit-early", nil, "handshake", "initialize", "no API key"},
		{"exit-mid-call", nil, "crashed", "call", "segmentation fault"},
		{"banner", nil, "handshake", "initialize", ""},
		{"stdout-flood", nil, "too_large", "call", ""},
		{"stderr-flood", nil, "", "", ""},
		{"invalid-jsonrpc", nil, "crashed", "call", ""},
		{"wrong-ids", nil, "timeout", "call", ""},
		{"drip", nil, "timeout", "call", ""},
		{"close-stdout", nil, "crashed", "call", ""},
		{"no-stdin", map[string]any{"payload": big}, "timeout", "call", ""},
		{"grandchild", nil, "timeout", "call", ""},
		{"fork-storm", nil, "timeout", "call", ""},
	}
	for _, tc := range cases {
		t.Run(tc.fake, func(t *testing.T) {
			start := time.Now()
			res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": tc.fake, "name": "any", "arguments": tc.args})
			elapsed := time.Since(start)
			bound := timeout + time.Second
			switch tc.fake {
			case "exit-early":
				bound += 100 * time.Millisecond // two retries' back-off
			case "no-stdin":
				bound += bigCost
			}
			if elapsed > bound {
				t.Errorf("answered after %s, want within %s", elapsed.Round(time.Millisecond), bound)
			}
			if tc.kind == "" {
				if res.IsError || res.Content[0].(*mcp.TextContent).Text != "survived the flood" {
					t.Errorf("result %v", res.Content)
				}
			} else {
				b, _ := json.Marshal(res.StructuredContent)
				var sc struct {
					E struct {
						Kind       string `json:"kind"`
						Phase      string `json:"phase"`
						StderrTail string `json:"stderr_tail"`
					} `json:"colibri_error"`
				}
				json.Unmarshal(b, &sc)
				if sc.E.Kind != tc.kind || sc.E.Phase != tc.phase {
					t.Errorf("kind/phase %s/%s, want %s/%s: %s", sc.E.Kind, sc.E.Phase, tc.kind, tc.phase, b)
				}
				if !strings.Contains(sc.E.StderrTail, tc.stderr) {
					t.Errorf("stderr_tail %q lacks %q", sc.E.StderrTail, tc.stderr)
				}
			}
			assertFakesGone(t, pids)
			next(t)
			// Colibri's own descriptors come back to where they were.
			for deadline := time.Now().Add(5 * time.Second); procs.FDs(colibriPid) > baseFDs; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Errorf("colibri holds %d fds, %d before", procs.FDs(colibriPid), baseFDs)
					break
				}
			}
		})
	}
}

// assertFakesGone waits (bounded) until every process a fake recorded is
// dead, then forgets them.
func assertFakesGone(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	if len(entries) == 0 {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, e := range entries {
		pid, _ := strconv.Atoi(e.Name())
		for procs.Alive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d of the fake is still alive", pid)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		os.Remove(filepath.Join(dir, e.Name()))
	}
}
