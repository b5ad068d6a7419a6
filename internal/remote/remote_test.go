package remote

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"999999999", 24 * time.Hour},
	} {
		if got := retryAfter(tc.v, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

// A body is bounded as one message; an event stream event by event.
func TestLimitBody(t *testing.T) {
	read := func(body string, events bool, limit int64) (string, bool, error) {
		c := &Conn{opts: Options{MaxBytes: limit}}
		b := &limitBody{c: c, rc: io.NopCloser(strings.NewReader(body)), events: events}
		got, err := io.ReadAll(b)
		return string(got), c.TooLarge(), err
	}
	event := "event: message\ndata: " + strings.Repeat("x", 40) + "\n\n" // 63 bytes
	stream := strings.Repeat(event, 10)
	if got, big, err := read(stream, true, 100); got != stream || big || err != nil {
		t.Errorf("ten events of 63 bytes under a 100-byte limit: %d bytes, too large %v, %v", len(got), big, err)
	}
	crlf := strings.ReplaceAll(stream, "\n", "\r\n")
	if got, big, err := read(crlf, true, 100); got != crlf || big || err != nil {
		t.Errorf("CRLF events: %d bytes, too large %v, %v", len(got), big, err)
	}
	if _, big, err := read(stream, true, 50); !big || !errors.Is(err, ErrTooLarge) {
		t.Errorf("an event of 63 bytes under a 50-byte limit: too large %v, %v", big, err)
	}
	if _, big, err := read(stream, false, 100); !big || !errors.Is(err, ErrTooLarge) {
		t.Errorf("a JSON body of 630 bytes under a 100-byte limit: too large %v, %v", big, err)
	}
	if got, big, err := read(stream, false, 630); got != stream || big || err != nil {
		t.Errorf("a JSON body of exactly the limit: too large %v, %v", big, err)
	}
}
