package host_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
)

// A hosted server's message of the hostile corpus (testdata/strict/) that
// two readers could read differently fails the request as kind protocol
// (handshake, "protocol: …", during initialize), naming the JSON location,
// and is not retried; every other is read. Nothing of a refused message
// reaches the caller: the request fails instead.
func TestCorpusFromTheServer(t *testing.T) {
	b, err := os.ReadFile("../testdata/strict/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, host.Options{})
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var it struct {
			Name, From, Answers, Message string
			Refuse                       bool
		}
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatal(err)
		}
		if it.From != "server" {
			continue
		}
		t.Run(it.Name, func(t *testing.T) {
			srv := fake("strict")
			srv.Env["FAKEMCP_STRICT_AT"] = it.Answers
			srv.Env["FAKEMCP_STRICT_LINE"] = strings.ReplaceAll(strings.ReplaceAll(it.Message, "<FF>", "\xff"), `"id":1,`, `"id":%ID%,`)
			var err error
			phase := failure.PhaseCall
			switch it.Answers {
			case "tools/list", "initialize":
				phase = failure.PhaseList
				_, err = h.ListTools(t.Context(), srv, nil)
			default:
				_, err = h.CallTool(t.Context(), srv, "any", nil, nil, nil)
			}
			switch {
			case !it.Refuse && err != nil:
				t.Fatalf("refused: %v", err)
			case !it.Refuse:
			case it.Answers == "initialize":
				e := wantKind(t, err, failure.KindHandshake, failure.PhaseInitialize)
				if !strings.Contains(e.Error(), "protocol: ") || !strings.Contains(e.Error(), "at /result/") {
					t.Errorf("message %q, want the cause protocol: and the location", e.Error())
				}
			default:
				e := wantKind(t, err, failure.KindProtocol, phase)
				if !strings.Contains(e.Error(), "at /") || e.Attempts > 1 {
					t.Errorf("message %q (attempts %d), want the location, one attempt", e.Error(), e.Attempts)
				}
			}
		})
	}
}

// Invalid UTF-8 in a hosted result's text (a file name read from disk) is
// replaced with U+FFFD, not refused.
func TestHostedTextIsRepaired(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("strict")
	srv.Env["FAKEMCP_STRICT_AT"] = "tools/call"
	srv.Env["FAKEMCP_STRICT_LINE"] = "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9 \\ud800.txt\"}]}}"
	res, err := h.CallTool(t.Context(), srv, "any", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "caf\uFFFD \uFFFD.txt" {
		t.Errorf("text = %q, want the invalid parts as U+FFFD", got)
	}
}

// The same corpus from a remote server over Streamable HTTP, each message
// as a JSON body and as an event of a stream: refused as protocol naming
// the location, nothing of it read; every other read.
func TestCorpusFromARemoteServer(t *testing.T) {
	b, err := os.ReadFile("../testdata/strict/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, events := range []bool{false, true} {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var it struct {
				Name, From, Answers, Message string
				Refuse                       bool
			}
			if err := json.Unmarshal([]byte(line), &it); err != nil {
				t.Fatal(err)
			}
			if it.From != "server" || (it.Answers == "notify" && !events) {
				continue
			}
			t.Run(fmt.Sprintf("%s/events=%v", it.Name, events), func(t *testing.T) {
				item := strings.ReplaceAll(it.Message, "<FF>", "\xff")
				srv := httptest.NewServer(rawRemote(events, it.Answers, item))
				defer srv.Close()
				h := newHarness(t, host.Options{})
				entry := remoteSrv(srv.URL + "/mcp")
				var err error
				phase := failure.PhaseCall
				switch it.Answers {
				case "tools/list", "initialize":
					phase = failure.PhaseList
					_, err = h.ListTools(t.Context(), entry, nil)
				default:
					_, err = h.CallTool(t.Context(), entry, "any", nil, nil, nil)
				}
				switch {
				case !it.Refuse && err != nil:
					t.Fatalf("refused: %v", err)
				case !it.Refuse:
				case it.Answers == "initialize":
					e := wantKind(t, err, failure.KindHandshake, failure.PhaseInitialize)
					if !strings.Contains(e.Error(), "protocol: ") || !strings.Contains(e.Error(), "at /result/") {
						t.Errorf("message %q, want the cause protocol: and the location", e.Error())
					}
				default:
					e := wantKind(t, err, failure.KindProtocol, phase)
					if !strings.Contains(e.Error(), "at /") || e.Attempts > 1 {
						t.Errorf("message %q (attempts %d), want the location, one attempt", e.Error(), e.Attempts)
					}
				}
			})
		}
	}
}

// rawRemote is a Streamable HTTP MCP server written by hand, so that it can
// answer at (a method, or "notify": before each call's answer) with item
// (its "id":1 made the request's id), as a JSON body or as a stream's event.
func rawRemote(events bool, at, item string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &m) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		answer := func(result string) string {
			return `{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`
		}
		var out []string
		switch {
		case m.Method == at:
			out = append(out, strings.Replace(item, `"id":1,`, `"id":`+string(m.ID)+`,`, 1))
		case m.Method == "server/discover":
			out = append(out, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32601,"message":"Method not found"}}`)
		case m.Method == "initialize":
			out = append(out, answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`))
		case m.Method == "tools/list":
			out = append(out, answer(`{"tools":[{"name":"any","inputSchema":{"type":"object"}}]}`))
		case m.Method == "tools/call":
			if at == "notify" {
				out = append(out, item)
			}
			out = append(out, answer(`{"content":[{"type":"text","text":"clean"}]}`))
		default:
			out = append(out, answer(`{}`))
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		if !events {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, out[len(out)-1])
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i, msg := range out {
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i+1, msg)
		}
	})
}
