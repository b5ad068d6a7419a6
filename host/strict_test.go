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
	"github.com/colibri-mcp/colibri-mcp/registry"
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
			askCorpus(t, h, srv, it.Answers, it.Refuse)
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
				askCorpus(t, h, entry, it.Answers, it.Refuse)
			})
		}
	}
}

// rawRemote is a Streamable HTTP MCP server written by hand, so that it can
// answer at (a method, or "notify": before each call's answer) with item
// (its "id":1 made the request's id), as a JSON body or as a stream's event.
func rawRemote(events bool, at, item string) http.Handler {
	return rawRemoteFramed(events, at, item, func(i int, msg string, _ bool) string {
		return fmt.Sprintf("id: %d\ndata: %s\n\n", i, msg)
	})
}

// rawRemoteFramed is rawRemote writing each event as frame has it (i from
// 1; last: the stream's last event).
func rawRemoteFramed(events bool, at, item string, frame func(i int, msg string, last bool) string) http.Handler {
	answers := rawAnswers(at, item)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		out, ok := answers(body)
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if out == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		if !events {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, out[len(out)-1])
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i, msg := range out {
			io.WriteString(w, frame(i+1, msg, i == len(out)-1))
		}
	})
}

// rawAnswers answers a request's body as rawRemote does: nil for a
// notification, false for a body that is not a message.
func rawAnswers(at, item string) func(body []byte) ([]string, bool) {
	return func(body []byte) ([]string, bool) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(body, &m) != nil {
			return nil, false
		}
		if m.ID == nil {
			return nil, true
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
		return out, true
	}
}

// An event is screened however the server frames it, as go-sdk's clients
// read it: the last event of a stream that ends without its blank line
// (read at EOF), data split over several lines or ended by "\r\n", and on
// the SSE transport an event of any name (its client reads them all).
func TestRemoteEventsFramedEveryWay(t *testing.T) {
	const item = `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_file","name":"delete_file","inputSchema":{"type":"object"}}]}}`
	for name, frame := range map[string]func(int, string, bool) string{
		"unterminated": func(i int, msg string, last bool) string {
			if last {
				return fmt.Sprintf("id: %d\ndata: %s", i, msg)
			}
			return fmt.Sprintf("id: %d\ndata: %s\n\n", i, msg)
		},
		"split over data lines, CRLF": func(i int, msg string, _ bool) string {
			half := strings.Index(msg, ",")
			return fmt.Sprintf("id: %d\r\ndata: %s\r\ndata: %s\r\n\r\n", i, msg[:half+1], msg[half+1:])
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(rawRemoteFramed(true, "tools/list", item, frame))
			defer srv.Close()
			h := newHarness(t, host.Options{})
			_, err := h.ListTools(t.Context(), remoteSrv(srv.URL+"/mcp"), nil)
			if e := wantKind(t, err, failure.KindProtocol, failure.PhaseList); !strings.Contains(e.Error(), "at /result/tools/0/name") {
				t.Errorf("message %q, want the location", e.Error())
			}
		})
	}
	t.Run("SSE transport, an event of another name", func(t *testing.T) {
		answers := rawAnswers("tools/list", item)
		events := make(chan string, 16)
		mux := http.NewServeMux()
		mux.HandleFunc("GET /sse", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: endpoint\ndata: /msg\n\n")
			w.(http.Flusher).Flush()
			for {
				select {
				case msg := <-events:
					fmt.Fprintf(w, "event: other\ndata: %s\n\n", msg)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		})
		mux.HandleFunc("POST /msg", func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			out, ok := answers(body)
			if !ok {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusAccepted)
			for _, msg := range out {
				events <- msg
			}
		})
		srv := httptest.NewServer(mux)
		defer srv.Close()
		h := newHarness(t, host.Options{})
		entry := remoteSrv(srv.URL + "/sse")
		entry.Transport = registry.TransportSSE
		_, err := h.ListTools(t.Context(), entry, nil)
		if e := wantKind(t, err, failure.KindProtocol, failure.PhaseList); !strings.Contains(e.Error(), "at /result/tools/0/name") {
			t.Errorf("message %q, want the location", e.Error())
		}
	})
}

// askCorpus asks the hosted server entry for what the corpus item answers
// (its list, or a call) and checks what colibri made of it: read when the
// item is clean, else protocol naming the location, not retried
// (handshake, "protocol: …", during initialize).
func askCorpus(t *testing.T, h *harness, entry *registry.Server, answers string, refuse bool) {
	t.Helper()
	var err error
	phase := failure.PhaseCall
	switch answers {
	case "tools/list", "initialize":
		phase = failure.PhaseList
		_, err = h.ListTools(t.Context(), entry, nil)
	default:
		_, err = h.CallTool(t.Context(), entry, "any", nil, nil, nil)
	}
	switch {
	case !refuse && err != nil:
		t.Fatalf("refused: %v", err)
	case !refuse:
	case answers == "initialize":
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
}
