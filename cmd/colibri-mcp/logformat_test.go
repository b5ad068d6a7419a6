package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A duration is written in milliseconds, its key ending in _ms, in both
// formats; a format colibri does not know is refused.
func TestDurationsInMilliseconds(t *testing.T) {
	for format, want := range map[string][]string{
		"json": {`"wait_ms":1500`, `"took_ms":0.25`, `"idle_ms":60000`},
		"text": {"wait_ms=1500", "took_ms=0.25", "idle_ms=60000"},
	} {
		var b bytes.Buffer
		h, ok := newLogHandler(format, slog.LevelInfo, &b)
		if !ok {
			t.Fatalf("newLogHandler(%q): refused", format)
		}
		slog.New(h).Info("x", "wait", 1500*time.Millisecond, "took", 250*time.Microsecond, "idle_ms", time.Minute)
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: %q lacks %s", format, b.String(), w)
			}
		}
	}
	if _, ok := newLogHandler("xml", slog.LevelInfo, &bytes.Buffer{}); ok {
		t.Error("newLogHandler(xml): accepted")
	}
}
