package httpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every caller's message of the hostile corpus (testdata/strict/) that two
// readers could read differently is refused 400, with a JSON-RPC error
// naming its location, before go-sdk reads anything of it; every other
// reaches go-sdk. Over Streamable HTTP and the HTTP+SSE transport alike.
func TestCorpusFromTheCallerOverHTTP(t *testing.T) {
	b, err := os.ReadFile("../../testdata/strict/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var seen atomic.Int64 // messages go-sdk's server received
	server := newMCPServer(slog.New(slog.DiscardHandler))
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			seen.Add(1)
			return next(ctx, method, req)
		}
	})
	ts := start(t, Options{Server: server})
	_, h, _ := rawRequest(t, http.MethodPost, ts.base+"/mcp", "", nil, initialize)
	session := map[string]string{"Mcp-Session-Id": h.Get("Mcp-Session-Id")}
	rawRequest(t, http.MethodPost, ts.base+"/mcp", "", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var it struct {
			Name, From, Message string
			Refuse              bool
		}
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatal(err)
		}
		if it.From != "caller" {
			continue
		}
		n++
		msg := strings.ReplaceAll(strings.ReplaceAll(it.Message, "<FF>", "\xff"), `"id":1,`, fmt.Sprintf(`"id":%d,`, 1000+n))
		before := seen.Load()
		status, _, body := rawRequest(t, http.MethodPost, ts.base+"/mcp", "", session, msg)
		refused := strings.Contains(body, "invalid request: at /")
		switch {
		case it.Refuse && (status != http.StatusBadRequest || !refused || (!strings.Contains(body, `"code":-32600`) && !strings.Contains(body, `"code":-32602`))):
			t.Errorf("%s: %d %s, want 400 with -32600 or -32602 naming the location", it.Name, status, body)
		case it.Refuse && seen.Load() != before:
			t.Errorf("%s: refused, yet go-sdk received it", it.Name)
		case !it.Refuse && refused:
			t.Errorf("%s: refused: %s", it.Name, body)
		}
	}
	// The HTTP+SSE transport's POSTs too.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.base+"/sse", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	endpoint := readEndpoint(t, resp.Body)
	status, _, body := rawRequest(t, http.MethodPost, ts.base+endpoint, "", nil,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"whoami"}}`)
	if status != http.StatusBadRequest || !strings.Contains(body, "at /params/Name") {
		t.Errorf("SSE POST: %d %s, want 400 naming /params/Name", status, body)
	}
}
