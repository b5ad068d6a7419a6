package main

import (
	"runtime/debug"
	"sync"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
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

// collectEagerly watches t for eagerHeld, unless the operator set GOGC or
// GOMEMLIMIT: their choice stands.
func collectEagerly(t *bulk.Table, getenv func(string) (string, bool)) {
	if _, ok := getenv("GOGC"); ok {
		return
	}
	if _, ok := getenv("GOMEMLIMIT"); ok {
		return
	}
	t.Watch(eagerHeld, func(over bool) {
		eager.Lock()
		defer eager.Unlock()
		switch {
		case over:
			if eager.over++; eager.over == 1 {
				debug.SetGCPercent(eagerGOGC)
			}
		default:
			if eager.over--; eager.over == 0 {
				debug.SetGCPercent(100)
			}
		}
	})
}
