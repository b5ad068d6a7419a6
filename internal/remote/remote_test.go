package remote

import (
	"encoding/json"
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
		var b io.Reader = &limitBody{c: c, rc: io.NopCloser(strings.NewReader(body))}
		if events {
			b = &eventBody{c: c, rc: io.NopCloser(strings.NewReader(body))}
		}
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

// An event stream's progress and log notifications go to the relay as
// each is read, in order, and reach the SDK without their data (their id
// still does); every other event passes whole.
func TestEventBodyRelay(t *testing.T) {
	stream := "" +
		": ok\n\n" +
		"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"t\",\"progress\":1}}\n\n" +
		"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata:  \"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\r\n\r\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n" +
		"event: endpoint\ndata: /notifications/message\n\n" +
		"id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[],\"method\":\"notifications/message\"}}\n\n"
	var took []string
	c := &Conn{opts: Options{MaxBytes: 1 << 20}}
	b := &eventBody{c: c, rc: io.NopCloser(strings.NewReader(stream)), keepIDs: true, relay: func(method string, params json.RawMessage) bool {
		took = append(took, method+" "+string(params))
		return method == "notifications/progress" || method == "notifications/message"
	}}
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		": ok\n\n" +
		"id: 1\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n" +
		"event: endpoint\ndata: /notifications/message\n\n" +
		"id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[],\"method\":\"notifications/message\"}}\n\n"
	if string(got) != want {
		t.Errorf("the SDK read\n%q\nwant\n%q", got, want)
	}
	wantTook := []string{
		`notifications/progress {"progressToken":"t","progress":1}`,
		`notifications/message {"level":"info","data":"x"}`,
		`notifications/tools/list_changed `,
	}
	if strings.Join(took, "|") != strings.Join(wantTook, "|") {
		t.Errorf("relayed %q, want %q", took, wantTook)
	}
	if c.BytesRead() != int64(len(stream)) {
		t.Errorf("counted %d bytes, want %d", c.BytesRead(), len(stream))
	}
}

// On the SSE transport's stream (which takes every event for a message) a
// relayed event leaves nothing; on the standalone stream one past the bound
// is told to tooLarge, not marked on the Conn (no request's answer).
func TestEventBodySSEAndStandalone(t *testing.T) {
	stream := "event: message\nid: 4\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
	c := &Conn{opts: Options{MaxBytes: 1 << 20}}
	b := &eventBody{c: c, rc: io.NopCloser(strings.NewReader(stream)), relay: func(string, json.RawMessage) bool { return true }}
	got, err := io.ReadAll(b)
	if want := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"; string(got) != want || err != nil {
		t.Errorf("the SSE transport read %q, %v; want %q", got, err, want)
	}

	told := 0
	c = &Conn{opts: Options{MaxBytes: 50}}
	b = &eventBody{c: c, rc: io.NopCloser(strings.NewReader(stream)), tooLarge: func() { told++ }}
	if _, err := io.ReadAll(b); !errors.Is(err, ErrTooLarge) || told != 1 || c.TooLarge() {
		t.Errorf("past the bound: %v, told %d, Conn too large %v", err, told, c.TooLarge())
	}
}
