package remote

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The standalone stream's GETs begin streamGap apart, whatever the server
// asks: the first at once, each later one streamGap after the one before
// began, however soon it is asked for. A GET asked for late goes at once.
// (In a synctest bubble the clock moves only while every goroutine waits:
// each gap is exact, however loaded the machine.)
func TestStandalonePaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Options{URL: "http://example.invalid/mcp"})
		defer c.Close()
		start := time.Now()
		var began []time.Duration
		for range 4 {
			if err := c.pace(t.Context()); err != nil {
				t.Fatal(err)
			}
			began = append(began, time.Since(start))
		}
		for i, d := range began {
			if want := time.Duration(i) * streamGap; d != want {
				t.Errorf("GET %d began at %v, want %v", i+1, d, want)
			}
		}
		time.Sleep(5 * streamGap) // a server that kept its stream open a while
		before := time.Now()
		if err := c.pace(t.Context()); err != nil || time.Since(before) != 0 {
			t.Errorf("a GET asked for long after the last waited %v (%v), want none", time.Since(before), err)
		}
	})
}

// A GET waiting for its turn ends when its context does, or when the
// connection is closed.
func TestStandalonePaceEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(Options{URL: "http://example.invalid/mcp"})
		if err := c.pace(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), streamGap/2)
		defer cancel()
		if err := c.pace(ctx); err != context.DeadlineExceeded {
			t.Errorf("a wait past its context: %v, want %v", err, context.DeadlineExceeded)
		}
		time.AfterFunc(streamGap/4, func() { c.Close() })
		if err := c.pace(t.Context()); err != errClosed {
			t.Errorf("a wait past Close: %v, want %v", err, errClosed)
		}
	})
}
