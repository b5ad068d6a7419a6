package health

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// One warn line per distinct bad content, one info line when good again,
// the metrics told each time, and /readyz's reason without folders.
func TestObserve(t *testing.T) {
	var logs bytes.Buffer
	var valid []bool
	invalid := 0
	h := New(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Valid: func(v bool) { valid = append(valid, v) }, Invalid: func() { invalid++ }})
	if ok, _ := h.Ready(); ok {
		t.Error("ready before any read")
	}
	bad := &registry.Error{File: "/etc/colibri/external-mcp.json", Problems: []registry.Problem{{Location: "/servers/a/argz", Message: `unknown key "argz"`}}}
	other := &registry.Error{File: "/etc/colibri/external-mcp.json", Problems: []registry.Problem{{Location: "/servers/b", Message: "no command"}}}
	h.Observe(nil)
	for _, err := range []error{bad, bad, bad, other, other} {
		h.Observe(err)
	}
	ok, reason := h.Ready()
	if ok || reason != "external-mcp.json: /servers/b: no command" {
		t.Errorf("Ready = %v, %q", ok, reason)
	}
	h.Observe(nil)
	h.Observe(nil)
	if ok, _ := h.Ready(); !ok {
		t.Error("not ready once mended")
	}
	l := logs.String()
	if strings.Count(l, "level=WARN") != 2 || strings.Count(l, "registry valid again") != 1 || !strings.Contains(l, "location=/servers/a/argz") {
		t.Errorf("log:\n%s", l)
	}
	if invalid != 2 || len(valid) != 8 || valid[0] != true || valid[1] != false || valid[7] != true {
		t.Errorf("invalid %d, valid %v", invalid, valid)
	}
}

// Watch reads the registry at once: a bad one is logged before any
// request comes.
func TestWatchReadsAtOnce(t *testing.T) {
	var reads atomic.Int32
	stop := Watch(t.Context(), func() { reads.Add(1) })
	defer stop()
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads when Watch returned, want 1", n)
	}
}
