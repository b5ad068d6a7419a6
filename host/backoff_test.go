package host

import (
	"testing"
	"time"
)

// The back-off doubles per attempt and is capped, never wrapping into a
// zero or negative wait, whatever the number of retries or the first wait.
func TestBackoffCapped(t *testing.T) {
	h := New(Options{RetryBackoff: time.Second})
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 7: time.Minute, 64: time.Minute, 1000: time.Minute} {
		if got := h.backoff(attempt); got != want {
			t.Errorf("backoff(%d) = %v, want %v", attempt, got, want)
		}
	}
	h = New(Options{RetryBackoff: time.Duration(1 << 62)})
	if got := h.backoff(5); got != maxRetryBackoff {
		t.Errorf("a huge first back-off: %v", got)
	}
}
