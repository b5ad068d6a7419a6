// Package testwait waits, in a test, for what only the outside shows (a
// file, a log line, a counter another goroutine moves) where there is no
// event to wait on: cond is polled every few milliseconds until it holds, and
// the test fails, naming what it waited for, when it does not within Bound.
// The bound is a failure's, never a test's timing: a test that passes never
// waits for it, however loaded the machine.
//
//	testwait.Eventually(t, "the audit line", func() bool { return strings.Contains(logs.String(), `"outcome"`) })
//
// It is test tooling: no production package imports it.
package testwait

import (
	"testing"
	"time"
)

// Bound is how long Eventually waits before it fails the test.
const Bound = 30 * time.Second

// every is how often cond is asked.
const every = 5 * time.Millisecond

// Eventually returns once cond holds, and fails t if it does not within
// Bound.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Soon(cond) {
		t.Fatalf("not within %s: %s", Bound, what)
	}
}

// Soon reports whether cond holds within Bound, for a test that says
// itself what is missing (with the log it searched, say) and goes on.
func Soon(cond func() bool) bool {
	deadline := time.Now().Add(Bound)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(every)
	}
	return true
}
