package gcpace

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
)

// gcPercent is the collector's current GOGC.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// While a table holds a megabyte or more, the collector runs at GOGC 50,
// and back at gcpace's pacing (100, or more below the heap floor) once it
// holds less; an operator's GOGC or GOMEMLIMIT is left alone. (Not
// parallel: GOGC is the process's.)
func TestServeEagerWhileHoldingMegabytes(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	SetBase(100) // GOGC 100, and gcpace knows it (another test may have left it elsewhere)
	big := []byte(`{"a":"` + strings.Repeat("x", EagerHeld) + `"}`)

	tab := bulk.New(bulk.DefaultMin)
	defer collect(tab, nil)()
	_, small := tab.Lift([]byte(`{"a":"` + strings.Repeat("x", 100<<10) + `"}`))
	if p := gcPercent(); p < 100 {
		t.Fatalf("holding 100 KiB: GOGC %d, want 100 or more", p)
	}
	_, refs := tab.Lift(big)
	if p := gcPercent(); p != EagerGOGC {
		t.Fatalf("holding 1 MiB: GOGC %d, want %d", p, EagerGOGC)
	}
	// A second table over the threshold, then the first one under it: still
	// eager until neither holds a megabyte.
	other := bulk.New(bulk.DefaultMin)
	defer collect(other, nil)()
	_, orefs := other.Lift(big)
	tab.Release(refs...)
	if p := gcPercent(); p != EagerGOGC {
		t.Fatalf("one of two tables under: GOGC %d, want %d", p, EagerGOGC)
	}
	other.Release(orefs...)
	if p := gcPercent(); p < 100 {
		t.Fatalf("both under: GOGC %d, want 100 or more", p)
	}
	tab.Release(small...)
	Start(HeapFloor)() // stopped: GOGC is back at 100

	for _, env := range []string{"GOGC=200", "GOMEMLIMIT=64MiB"} {
		tab := bulk.New(bulk.DefaultMin)
		collect(tab, []string{env})
		_, refs := tab.Lift(big)
		if p := gcPercent(); p != 100 {
			t.Errorf("with %s: GOGC %d while holding 1 MiB, want it left at 100", env, p)
		}
		tab.Release(refs...)
	}
}

// collect is serve's wiring (cmd/colibri-mcp): Serve, its hold watching t.
func collect(t *bulk.Table, environ []string) (stop func()) {
	stop, hold := Serve(func(name string) (string, bool) {
		for _, kv := range environ {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				return v, true
			}
		}
		return "", false
	})
	t.Watch(EagerHeld, hold)
	return stop
}
