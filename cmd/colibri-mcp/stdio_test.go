package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// rawStdio is the built colibri-mcp serving stdio, driven with raw lines.
type rawStdio struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	exited chan error
}

func startRawStdio(t *testing.T, args ...string) *rawStdio {
	t.Helper()
	cmd := exec.Command(colibriBin, append([]string{"serve", "--external-config", writeRegistry(t, nil), "--external-call"}, args...)...)
	cmd.Env = append(cmd.Environ(), pinEnv(t), "E2E_SECRET=x")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawStdio{t: t, cmd: cmd, in: in, lines: make(chan string, 100), exited: make(chan error, 1)}
	go func() {
		r := bufio.NewReaderSize(out, 1<<20)
		for {
			l, err := r.ReadString('\n')
			if l != "" {
				s.lines <- l
			}
			if err != nil {
				close(s.lines)
				s.exited <- cmd.Wait()
				return
			}
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	s.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.recv()
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *rawStdio) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("writing to colibri's stdin: %v", err)
	}
}

type rawResponse struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct{ Code int }
}

func (s *rawStdio) recv() rawResponse {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.t.Fatalf("colibri-mcp ended the session: %v", <-s.exited)
		}
		var r rawResponse
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			s.t.Fatalf("%q: %v", l, err)
		}
		return r
	case <-time.After(30 * time.Second):
		s.t.Fatal("no answer within 30s")
	}
	return rawResponse{}
}

// Raw bytes on the real binary's stdin: each bad line gets its JSON-RPC
// error and the next request on the same session is answered; the largest
// accepted message follows --max-result-bytes.
func TestStdioBadLinesKeepTheSession(t *testing.T) {
	s := startRawStdio(t, "--max-result-bytes", "100000") // lines up to 100000 + 1 MiB
	deep := strings.Repeat(`{"a":`, 1001) + "1" + strings.Repeat("}", 1001)
	for i, c := range []struct {
		name, line string
		code       int
		id         any
	}{
		{"not JSON", "not json at all", -32700, nil},
		{"empty batch", "[]", -32600, nil},
		{"1001 deep", deep, -32600, nil},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":3,"method":"ping"}`, -32600, 3.0},
		{"no jsonrpc", `{"id":4,"method":"ping"}`, -32600, 4.0},
		{"object id", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, nil},
		{"over the limit", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"p":"` + strings.Repeat("x", 1200000) + `"}}`, -32600, nil},
	} {
		s.send(c.line)
		if r := s.recv(); r.Error == nil || r.Error.Code != c.code || r.ID != c.id {
			t.Errorf("%s: %+v, want code %d, id %v", c.name, r, c.code, c.id)
		}
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"colibri_external_mcp_call_tool","arguments":{"server":"demo","name":"echo","arguments":{"message":"still here"}}}}`, 100+i))
		if r := s.recv(); r.Error != nil || !strings.Contains(string(r.Result), "Echo: still here") {
			t.Fatalf("after %s: %+v %s", c.name, r, r.Result)
		}
	}
}

// On stdin EOF, a call in flight is answered before colibri exits 0.
func TestStdioEOFAnswersCallsInFlight(t *testing.T) {
	t.Parallel()
	s := startRawStdio(t)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"colibri_external_mcp_call_tool","arguments":{"server":"demo","name":"slow","arguments":{"steps":5,"interval_ms":100}}}}`)
	s.in.Close()
	r := s.recv()
	if r.Error != nil || r.ID != 1.0 || !strings.Contains(string(r.Result), "done after 5 steps") {
		t.Fatalf("the call in flight at EOF: %+v %s", r, r.Result)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			t.Errorf("colibri-mcp exited with %v after stdin ended, want 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("colibri-mcp did not exit after stdin ended")
	}
}

// Over stdio a cancelled call gets no answer (internal/stdioserve), yet its audit
// line is written all the same: outcome cancelled.
func TestStdioCancelledCallIsAudited(t *testing.T) {
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	s := startRawStdio(t, "--audit-log", auditLog)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"colibri_external_mcp_call_tool","arguments":{"server":"demo","name":"slow","arguments":{"steps":100,"interval_ms":50}}}}`)
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("colibri-mcp ended the session: %v", <-s.exited)
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("nothing on stdout within 30s")
		}
		return ""
	}
	if l := next(); !strings.Contains(l, `"notifications/progress"`) {
		t.Fatalf("want the call's progress first, got %s", l)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"changed my mind"}}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	for {
		l := next()
		if strings.Contains(l, `"id":1`) {
			t.Fatalf("the cancelled call was answered: %s", l)
		}
		if strings.Contains(l, `"id":2`) {
			break
		}
	}
	testwait.Eventually(t, "the cancelled call's audit line", func() bool {
		b, _ := os.ReadFile(auditLog)
		return strings.Contains(string(b), `"outcome":"cancelled"`)
	})
	lines := auditLines(t, auditLog)
	if len(lines) != 1 || lines[0]["tool"] != "slow" || lines[0]["error_kind"] != "cancelled" || lines[0]["transport"] != "stdio" {
		t.Errorf("audit: %v", lines)
	}
}
