package testwait

import (
	"sync/atomic"
	"testing"
)

// Eventually returns as soon as cond holds, asking it again until then.
func TestEventually(t *testing.T) {
	var n atomic.Int32
	Eventually(t, "the third ask", func() bool { return n.Add(1) == 3 })
	if got := n.Load(); got != 3 {
		t.Errorf("cond asked %d times, want 3", got)
	}
}
