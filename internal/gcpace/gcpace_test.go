package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// With a small live heap, a collection raises GOGC so that the next comes
// at the floor; stop gives GOGC back Go's 100.
func TestPace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := Start(256 << 20)
	waitPercent(t, func(p int) bool { return p > 100 })
	stop()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC %d after stop, want 100", p)
	}
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
