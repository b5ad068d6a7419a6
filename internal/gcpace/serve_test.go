package gcpace

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// serve paces the collector (GOGC above 100 while the heap is small), also
// under an operator's GOMEMLIMIT, and stops at stop; an operator's GOGC is
// left alone. (Not parallel: GOGC is the process's.)
func TestServeLeavesTheOperatorsGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, env := range [][]string{nil, {"GOMEMLIMIT=64MiB"}} {
		stop := Serve(environ(env))
		waitPercent(t, func(p int) bool { return p > 100 })
		stop()
		if p := debug.SetGCPercent(100); p != 100 {
			t.Fatalf("with %v: GOGC %d after stop, want Go's 100", env, p)
		}
	}

	debug.SetGCPercent(200) // as the runtime would have read GOGC=200
	stop := Serve(environ([]string{"GOGC=200"}))
	for range 20 { // pacing, were it on, would have set GOGC after a cycle
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if p := debug.SetGCPercent(200); p != 200 {
		t.Errorf("with GOGC=200: GOGC %d, want the operator's 200 left alone", p)
	}
	stop()
}

func environ(kv []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, e := range kv {
			if v, ok := strings.CutPrefix(e, name+"="); ok {
				return v, true
			}
		}
		return "", false
	}
}
