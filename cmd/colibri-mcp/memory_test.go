package main

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/gcpace"
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
func TestCollectEagerlyWhileHoldingMegabytes(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	debug.SetGCPercent(100)
	big := []byte(`{"a":"` + strings.Repeat("x", eagerHeld) + `"}`)

	tab := bulk.New(bulk.DefaultMin)
	defer collectEagerly(tab, envLookup(nil))()
	_, small := tab.Lift([]byte(`{"a":"` + strings.Repeat("x", 100<<10) + `"}`))
	if p := gcPercent(); p < 100 {
		t.Fatalf("holding 100 KiB: GOGC %d, want 100 or more", p)
	}
	_, refs := tab.Lift(big)
	if p := gcPercent(); p != eagerGOGC {
		t.Fatalf("holding 1 MiB: GOGC %d, want %d", p, eagerGOGC)
	}
	// A second table over the threshold, then the first one under it: still
	// eager until neither holds a megabyte.
	other := bulk.New(bulk.DefaultMin)
	defer collectEagerly(other, envLookup(nil))()
	_, orefs := other.Lift(big)
	tab.Release(refs...)
	if p := gcPercent(); p != eagerGOGC {
		t.Fatalf("one of two tables under: GOGC %d, want %d", p, eagerGOGC)
	}
	other.Release(orefs...)
	if p := gcPercent(); p < 100 {
		t.Fatalf("both under: GOGC %d, want 100 or more", p)
	}
	tab.Release(small...)
	gcpace.Start(heapFloor)() // stopped: GOGC is back at 100

	for _, env := range []string{"GOGC=200", "GOMEMLIMIT=64MiB"} {
		tab := bulk.New(bulk.DefaultMin)
		collectEagerly(tab, envLookup([]string{env}))
		_, refs := tab.Lift(big)
		if p := gcPercent(); p != 100 {
			t.Errorf("with %s: GOGC %d while holding 1 MiB, want it left at 100", env, p)
		}
		tab.Release(refs...)
	}
}
