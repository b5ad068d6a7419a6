// Package gcpace paces Go's collector for a process whose live heap is
// small and whose allocation is high: colibri's, where most of what a call
// allocates is go-sdk's per-message decode buffers (32 KiB or more for
// each JSON value it unmarshals), garbage at once. With Go's default
// pacing (GOGC 100, a 4 MiB minimum) a live heap of a few MiB is collected
// every few calls, and marking costs as much CPU as the calls themselves.
//
// After each collection, gcpace sets GOGC so that the next one comes when
// the heap reaches the floor (or twice the live heap, Go's GOGC of 100,
// once that is larger): a small process collects less often, a large one
// exactly as Go would.
//
//	stop := gcpace.Start(32<<20)
//	defer stop()
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// MaxPercent bounds the GOGC gcpace sets.
const MaxPercent = 1000

var pace struct {
	sync.Mutex
	on      bool
	gen     int // bumped by each Start and stop: an old sentinel stops re-arming
	floor   int64
	percent int // what gcpace set last
}

// Start paces the collector with a heap floor of floor bytes until the
// returned func is called, which gives GOGC back Go's 100.
func Start(floor int64) (stop func()) {
	pace.Lock()
	pace.on, pace.floor = true, floor
	pace.gen++
	gen := pace.gen
	pace.Unlock()
	arm(gen)
	return func() {
		pace.Lock()
		defer pace.Unlock()
		if pace.gen != gen {
			return
		}
		pace.on = false
		pace.gen++
		pace.percent = 100
		debug.SetGCPercent(100)
	}
}

// Percent is the GOGC gcpace set last (0 before it set any).
func Percent() int {
	pace.Lock()
	defer pace.Unlock()
	return pace.percent
}

// sentinel is collected by each GC cycle; its finalizer paces the next.
type sentinel struct{ _ [16]byte }

func arm(gen int) {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		pace.Lock()
		defer pace.Unlock()
		if !pace.on || pace.gen != gen {
			return
		}
		apply(liveHeap())
		go arm(gen) // the next cycle's sentinel
	})
}

// apply sets GOGC for live bytes of live heap (pace held).
func apply(live uint64) {
	p := 100
	if live > 0 && int64(live) < pace.floor {
		p = max(p, min(MaxPercent, int((pace.floor-int64(live))*100/int64(live))))
	}
	if p != pace.percent {
		pace.percent = p
		debug.SetGCPercent(p)
	}
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

func liveHeap() uint64 {
	s := []metrics.Sample{liveSample[0]}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
