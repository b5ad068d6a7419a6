package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// With a small live heap, a collection raises GOGC so that the next comes
// at the floor; the base applies above it; stop restores the base.
func TestPace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := Start(256 << 20)
	waitPercent(t, func(p int) bool { return p > 100 })
	SetBase(50)
	if p := Percent(); p != 50 {
		t.Errorf("GOGC %d after SetBase(50), want 50: eager collection ignores the floor", p)
	}
	SetBase(100)
	if p := Percent(); p <= 100 {
		t.Errorf("GOGC %d after SetBase(100) with a small heap, want the floor's", p)
	}
	SetBase(50)
	stop()
	if p := debug.SetGCPercent(100); p != 50 {
		t.Errorf("GOGC %d after stop, want the base 50", p)
	}
	SetBase(100)
}

func waitPercent(t *testing.T, ok func(int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(Percent()) {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d", Percent())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}
