package relist

import (
	"testing"
	"time"
)

func TestGate(t *testing.T) {
	var g Gate
	if act, _ := g.Notify(); !act {
		t.Fatal("the first notification with no list in flight does not act")
	}
	if act, _ := g.Notify(); act {
		t.Fatal("a second one before the next list acts")
	}
	g.Begin()
	overs := 0
	for range 1000 {
		act, over := g.Notify()
		if act {
			t.Fatal("a notification during colibri's own list acts")
		}
		if over {
			overs++
		}
	}
	g.End()
	if overs != 1 {
		t.Errorf("the bound was reported %d times", overs)
	}
	if act, _ := g.Notify(); !act {
		t.Fatal("after the list, a notification does not act")
	}
}

func TestBackoff(t *testing.T) {
	var b Backoff
	want := []time.Duration{First, 2 * First, 4 * First}
	for _, w := range want {
		if d := b.Delay(); d != w {
			t.Fatalf("Delay = %v, want %v", d, w)
		}
		b.Listed(true)
	}
	for range 100 {
		b.Listed(true)
	}
	if d := b.Delay(); d != Max {
		t.Errorf("Delay = %v after many, want %v", d, Max)
	}
	b.Listed(false)
	if d := b.Delay(); d != First {
		t.Errorf("Delay = %v after a change, want %v", d, First)
	}
}
