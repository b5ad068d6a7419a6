package host_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A remote upstream is sent a call's arguments with their large strings put
// back (its transport is go-sdk's, which does not lower). One that can no
// longer be put back stops the call: the remote server is never sent the
// reference, nor the table's marker.
func TestRemoteCallWithALostStringIsNotSent(t *testing.T) {
	var got atomic.Value
	remote := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Message string `json:"message"`
	}) (*mcp.CallToolResult, any, error) {
		got.Store(in.Message)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, nil))
	defer srv.Close()
	// Before Close: the warm session's GET stream would hold it.
	defer srv.CloseClientConnections()
	table := bulk.New(1 << 10)
	h := newHarness(t, host.Options{Bulk: table})
	received := func() string { s, _ := got.Load().(string); return s }
	far := &registry.Server{Name: "far", URL: srv.URL}

	msg := strings.Repeat("m", 4<<10)
	lifted, refs := table.Lift([]byte(`{"message":"` + msg + `"}`))
	if len(refs) != 1 {
		t.Fatalf("nothing lifted from %d bytes", len(msg))
	}
	// Held: the remote server gets the string itself.
	res, err := h.CallTool(t.Context(), far, "echo", &session.Arguments{Value: map[string]any{"message": "checked"}, Raw: lifted}, nil, nil)
	if err != nil || res.IsError || received() != msg {
		t.Fatalf("with the string held: %v %+v; the server got %d bytes", err, res, len(received()))
	}
	// Released: the call fails before it is sent.
	got.Store("")
	table.Release(refs...)
	_, err = h.CallTool(t.Context(), far, "echo", &session.Arguments{Value: map[string]any{"message": "checked"}, Raw: lifted}, nil, nil)
	if failure.KindOf(err) != failure.KindInternal {
		t.Errorf("with the string lost: kind %s (%v), want internal", failure.KindOf(err), err)
	}
	if s := received(); s != "" {
		t.Errorf("the remote server was called with %q", s)
	}
	if err != nil && strings.Contains(err.Error(), "colibri-bulk-") {
		t.Errorf("the error shows the marker: %v", err)
	}
}
