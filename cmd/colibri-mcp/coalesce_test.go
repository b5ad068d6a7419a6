package main

import (
	"testing"
	"time"
)

// Kick never waits for f, runs never overlap, and the Kicks that come
// during a run make exactly one more run.
func TestKickCoalesces(t *testing.T) {
	release := make(chan struct{})
	started := make(chan int, 10)
	n, inside := 0, 0
	r := newCoalescer(func() {
		inside++
		if inside > 1 {
			t.Error("two runs at once")
		}
		n++
		started <- n
		<-release
		inside--
	})
	r.Kick()
	if got := <-started; got != 1 {
		t.Fatalf("run %d", got)
	}
	done := make(chan struct{})
	go func() {
		for range 100 {
			r.Kick() // f is blocked: these must not be
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Kick blocked while f ran")
	}
	release <- struct{}{}
	if got := <-started; got != 2 {
		t.Fatalf("run %d", got)
	}
	release <- struct{}{}
	select {
	case got := <-started:
		t.Fatalf("run %d: 100 Kicks during one run made more than one more", got)
	case <-time.After(100 * time.Millisecond):
	}
}
