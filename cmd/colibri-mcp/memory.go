package main

import (
	"sync"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/gcpace"
)

// While serve holds a megabyte or more of messages in its bulk table
// (internal/bulk), Go's collector runs twice as often as it usually does
// (GOGC 50 instead of 100). What is live then is mostly those messages (an
// 8 MiB echo holds the caller's arguments, kept for a retry, and the
// server's answer), so the heap peaks at about 1.5 times them rather than
// twice: 23 MiB above idle instead of 28–32 (docs/benchmarks.md). A cycle
// costs little then, because message bytes hold no pointers to scan. Small
// calls keep Go's default pacing.
const (
	eagerHeld = 1 << 20
	eagerGOGC = 50
)

// eager counts the tables holding eagerHeld or more, across the process
// (tests run several serves in one).
var eager struct {
	sync.Mutex
	over int
}

// heapFloor is the heap below which serve's collector does not run
// (internal/gcpace): a small call allocates ~0.4 MiB, nearly all of it
// go-sdk's decode buffers and garbage at once, and with Go's default
// pacing a live heap of a few MiB was collected every few calls, marking
// costing as much CPU as the calls (docs/benchmarks.md, "The cost of a
// call"). Above it Go's own pacing (or the eager one below) applies.
const heapFloor = 32 << 20

// collectEagerly paces the collector (gcpace, with heapFloor) and watches
// t for eagerHeld, unless the operator set GOGC or GOMEMLIMIT: their
// choice stands. The returned func stops the pacing.
func collectEagerly(t *bulk.Table, getenv func(string) (string, bool)) (stop func()) {
	if _, ok := getenv("GOGC"); ok {
		return func() {}
	}
	if _, ok := getenv("GOMEMLIMIT"); ok {
		return func() {}
	}
	stop = gcpace.Start(heapFloor)
	t.Watch(eagerHeld, func(over bool) {
		eager.Lock()
		defer eager.Unlock()
		switch {
		case over:
			if eager.over++; eager.over == 1 {
				gcpace.SetBase(eagerGOGC)
			}
		default:
			if eager.over--; eager.over == 0 {
				gcpace.SetBase(100)
			}
		}
	})
	return stop
}
