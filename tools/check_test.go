package tools_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// check's result, as `colibri-mcp check` prints it: the registry's names
// first, then each server's line as it is known, a failure in its own entry
// with its kind; with the probe, a working server's tool count.
func TestCheck(t *testing.T) {
	svc := newService(t, false, fakeRegistry())
	var read []string
	var done []string
	res := svc.Check(t.Context(), tools.CheckOptions{
		Probe: true,
		Read:  func(names []string) { read = names },
		Done:  func(r tools.CheckServer) { done = append(done, r.Server) },
	})
	if !slices.Equal(read, []string{"broken", "ok"}) {
		t.Errorf("Read got %v, want the registry's names before any server", read)
	}
	slices.Sort(done)
	if !slices.Equal(done, []string{"broken", "ok"}) {
		t.Errorf("Done got %v, want each server once", done)
	}
	if res.OK || res.Failed() != 1 || res.Error != nil || res.ConfigPath != "in-memory" {
		t.Fatalf("result = %+v, want one failure and no registry error", res)
	}
	for _, r := range res.Servers {
		switch r.Server {
		case "broken":
			if r.OK || r.Error == nil || r.Error.Kind != failure.KindSpawn || r.Tools != nil {
				t.Errorf("broken: %+v, want a spawn failure and no tool count", r)
			}
		case "ok":
			if !r.OK || r.Tools == nil || *r.Tools == 0 || r.Confinement == "" {
				t.Errorf("ok: %+v, want ok with its tools counted and its confinement", r)
			}
		}
	}

	// Without the probe, nothing is started: no tool count.
	res = svc.Check(t.Context(), tools.CheckOptions{})
	for _, r := range res.Servers {
		if r.Tools != nil {
			t.Errorf("%s: tools counted without the probe", r.Server)
		}
	}
}

// A registry that cannot be read is the check's error (config), and no
// server is looked at.
func TestCheckUnreadableRegistry(t *testing.T) {
	h := host.New(host.Options{Timeout: 10 * time.Second})
	t.Cleanup(h.Close)
	svc := tools.New(tools.Options{Host: h, ConfigPath: "x.json",
		Registry: func() (*registry.Registry, error) { return nil, errors.New("x.json: unexpected end of JSON input") }})
	t.Cleanup(svc.Close)
	res := svc.Check(t.Context(), tools.CheckOptions{Probe: true,
		Read: func([]string) { t.Error("Read called for an unreadable registry") }})
	if res.OK || res.Error == nil || res.Error.Kind != failure.KindConfig || len(res.Servers) != 0 {
		t.Fatalf("result = %+v, want a config error and no servers", res)
	}
}
