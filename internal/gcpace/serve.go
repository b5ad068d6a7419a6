package gcpace

import "sync"

// While serve holds a megabyte or more of messages in a bulk table
// (internal/bulk), Go's collector runs twice as often as it usually does
// (GOGC 50 instead of 100). What is live then is mostly those messages (an
// 8 MiB echo holds the caller's arguments, kept for a retry, and the
// server's answer), so the heap peaks at about 1.5 times them rather than
// twice: 23 MiB above idle instead of 28–32 (docs/benchmarks.md). A cycle
// costs little then, because message bytes hold no pointers to scan. Small
// calls keep Go's default pacing.
const (
	EagerHeld = 1 << 20
	EagerGOGC = 50
)

// HeapFloor is the heap below which serve's collector does not run: a
// small call allocates ~0.4 MiB, nearly all of it go-sdk's decode buffers
// and garbage at once, and with Go's default pacing a live heap of a few
// MiB was collected every few calls, marking costing as much CPU as the
// calls (docs/benchmarks.md, "The cost of a call"). Above it Go's own
// pacing (or the eager one) applies.
const HeapFloor = 32 << 20

// eager counts the holders over EagerHeld, across the process (tests run
// several serves in one).
var eager struct {
	sync.Mutex
	over int
}

// Serve paces the collector for serve (Start with HeapFloor), unless the
// operator set GOGC or GOMEMLIMIT (getenv): their choice stands. hold is
// for a holder of large messages (bulk.Table.Watch with EagerHeld): true
// when it holds EagerHeld bytes or more, false when it holds less again;
// while any holds, the collector runs at EagerGOGC. stop stops the pacing.
func Serve(getenv func(string) (string, bool)) (stop func(), hold func(over bool)) {
	if _, ok := getenv("GOGC"); ok {
		return func() {}, func(bool) {}
	}
	if _, ok := getenv("GOMEMLIMIT"); ok {
		return func() {}, func(bool) {}
	}
	return Start(HeapFloor), func(over bool) {
		eager.Lock()
		defer eager.Unlock()
		switch {
		case over:
			if eager.over++; eager.over == 1 {
				SetBase(EagerGOGC)
			}
		default:
			if eager.over--; eager.over == 0 {
				SetBase(100)
			}
		}
	}
}
