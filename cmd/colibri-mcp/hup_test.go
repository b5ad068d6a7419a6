package main

import (
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
)

// Each SIGHUP runs the actions in order, each logged with its outcome; a
// failed one is logged as failed and the next still runs. After stop,
// SIGHUP runs nothing.
func TestWatch(t *testing.T) {
	var log syncbuf.Buffer
	ran := make(chan string, 4)
	stop := hupActions{
		{What: "first", Do: func() error { ran <- "first"; return errors.New("no such file") }},
		{What: "second", Do: func() error { ran <- "second"; return nil }},
	}.Watch(slog.New(slog.NewTextHandler(&log, nil)))
	syscall.Kill(syscall.Getpid(), syscall.SIGHUP)
	for _, want := range []string{"first", "second"} {
		select {
		case got := <-ran:
			if got != want {
				t.Fatalf("ran %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("SIGHUP did not run %s", want)
		}
	}
	stop()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(log.String(), "SIGHUP: second"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("log: %q", log.String())
		}
	}
	if s := log.String(); !strings.Contains(s, `msg="SIGHUP: first failed; the previous one stays in force" err="no such file"`) {
		t.Errorf("the failed action's line: %q", s)
	}
	if len(ran) != 0 {
		t.Errorf("ran %d actions more", len(ran))
	}
}
