package gcpace

// HeapFloor is the heap below which serve's collector does not run: a
// small call allocates ~0.4 MiB, nearly all of it go-sdk's decode buffers
// and garbage at once, and with Go's default pacing a live heap of a few
// MiB was collected every few calls, marking costing as much CPU as the
// calls (docs/benchmarks.md, "The cost of a call"). Above it Go's own
// pacing applies.
const HeapFloor = 32 << 20

// Serve paces the collector for serve (Start with HeapFloor), unless the
// operator set GOGC (getenv): their pacing stands. A soft memory limit
// (GOMEMLIMIT, which the Go runtime applies itself) is the one setting for
// a process that must stay small (docs/operations.md#memory): the pacing
// goes on under it, and the runtime collects sooner as the heap nears it.
// stop stops the pacing.
func Serve(getenv func(string) (string, bool)) (stop func()) {
	if _, ok := getenv("GOGC"); ok {
		return func() {}
	}
	return Start(HeapFloor)
}
