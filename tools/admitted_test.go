package tools

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A request reads the registry once, however many of its steps ask, and
// runs under that registry to its end: an edit is seen by the next request.
// What asks before the request was admitted reads the file as it is, and
// admits nothing.
func TestARequestReadsTheRegistryOnce(t *testing.T) {
	var reads atomic.Int32
	var cur atomic.Pointer[registry.Registry]
	cur.Store(&registry.Registry{Path: "first"})
	h := host.New(host.Options{})
	defer h.Close()
	s := New(Options{Host: h, Registry: func() (*registry.Registry, error) {
		reads.Add(1)
		return cur.Load(), nil
	}})
	defer s.Close()
	path := func(reg *registry.Registry, err error) string {
		if err != nil {
			t.Fatal(err)
		}
		return reg.Path
	}

	ctx := withAdmission(t.Context())
	if got := path(s.registry(ctx)); got != "first" || reads.Load() != 1 {
		t.Fatalf("before admission: %q after %d reads", got, reads.Load())
	}
	if got := path(s.admit(ctx)); got != "first" || reads.Load() != 2 {
		t.Fatalf("admission: %q after %d reads, want a read of its own", got, reads.Load())
	}
	cur.Store(&registry.Registry{Path: "edited"})
	for range 3 {
		if a, r := path(s.admit(ctx)), path(s.registry(ctx)); a != "first" || r != "first" {
			t.Errorf("the same request read %q and %q after an edit, want the registry it was admitted under", a, r)
		}
		s.labels(ctx, "server", "tool")
	}
	if n := reads.Load(); n != 2 {
		t.Errorf("%d reads of the registry in one request, want 2", n)
	}
	if got := path(s.admit(withAdmission(context.Background()))); got != "edited" {
		t.Errorf("the next request runs under %q, want the edited registry", got)
	}
	// Without an admission (a caller outside an MCP session's
	// middlewares) every ask reads.
	before := reads.Load()
	s.admit(t.Context())
	s.admit(t.Context())
	if n := reads.Load() - before; n != 2 {
		t.Errorf("%d reads for two asks without an admission, want 2", n)
	}
}
