package lineconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// connOn connects a Transport reading input; what it writes goes to w.
func connOn(t *testing.T, input string, w io.WriteCloser) *conn {
	t.Helper()
	c, err := (&Transport{Reader: io.NopCloser(strings.NewReader(input)), Writer: w}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*conn)
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) Close() error                { return nil }

func read(t *testing.T, c *conn) (jsonrpc.Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return c.Read(ctx)
}

// Lines are messages: CRLF and blank lines are fine, a line longer than
// the read buffer arrives whole, and the input's end is io.EOF.
func TestReadLines(t *testing.T) {
	big := strings.Repeat("x", 300<<10)
	input := "\n" + `{"jsonrpc":"2.0","id":1,"method":"a","params":{"k":"` + big + `"}}` + "\r\n" +
		"   \n" + `{"jsonrpc":"2.0","id":"s","result":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/x"}` // no newline at the end
	c := connOn(t, input, discard{})
	m, err := read(t, c)
	if req, ok := m.(*jsonrpc.Request); err != nil || !ok || req.Method != "a" || len(req.Params) != len(big)+8 {
		t.Fatalf("first: %T %v", m, err)
	}
	if m, err = read(t, c); err != nil {
		t.Fatal(err)
	} else if resp, ok := m.(*jsonrpc.Response); !ok || resp.ID.Raw() != "s" {
		t.Fatalf("second: %#v", m)
	}
	if m, err = read(t, c); err != nil || m.(*jsonrpc.Request).Method != "notifications/x" {
		t.Fatalf("third: %#v %v", m, err)
	}
	if _, err = read(t, c); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

// A line that is not exactly one JSON-RPC message ends the connection,
// after the messages before it, as go-sdk's IOTransport does.
func TestReadRefuses(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	for name, line := range map[string]string{
		"not JSON":        "hello",
		"two values":      `{"jsonrpc":"2.0","id":1,"result":{}} {"jsonrpc":"2.0","id":2,"result":{}}`,
		"a batch":         `[{"jsonrpc":"2.0","id":1,"result":{}}]`,
		"not JSON-RPC":    `{"jsonrpc":"1.0","id":1,"result":{}}`,
		"split over two":  "{\"jsonrpc\":\"2.0\",\n\"id\":1,\"result\":{}}",
		"truncated value": `{"jsonrpc":"2.0","id":1,"result":{`,
		"a NUL byte":      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\x00",
		"a BOM":           "\ufeff" + `{"jsonrpc":"2.0","id":1,"result":{}}`,
		"a number":        "42",
		"a string":        `"x"`,
		"null":            "null",
		"an empty object": "{}",
	} {
		t.Run(name, func(t *testing.T) {
			c := connOn(t, ok+line+"\n"+ok, discard{})
			if _, err := read(t, c); err != nil {
				t.Fatalf("the line before: %v", err)
			}
			_, err := read(t, c)
			if err == nil || err == io.EOF {
				t.Fatalf("got %v, want an error", err)
			}
			if name == "a batch" && !errors.Is(err, ErrBatch) {
				t.Fatalf("got %v, want ErrBatch", err)
			}
		})
	}
}

type recorder struct{ strings.Builder }

func (r *recorder) Close() error { return nil }

// Each message goes out as one line.
func TestWriteLine(t *testing.T) {
	var out recorder
	c := connOn(t, "", &out)
	id, _ := jsonrpc.MakeID(float64(3))
	if err := c.Write(t.Context(), &jsonrpc.Request{ID: id, Method: "ping"}); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), `{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n"; got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

// Messages written from several goroutines at once, while the connection
// also reads, each go out whole, one per line; Close during both ends them.
func TestConcurrentWrites(t *testing.T) {
	pr, pw := io.Pipe()
	c, err := (&Transport{Reader: io.NopCloser(strings.NewReader(strings.Repeat(`{"jsonrpc":"2.0","method":"n"}`+"\n", 100))), Writer: chunker{pw}}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 4, 25
	big := strings.Repeat("y", spliceMin+1)
	go func() {
		for range 100 {
			if _, err := c.Read(t.Context()); err != nil {
				return
			}
		}
	}()
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				id, _ := jsonrpc.MakeID(float64(w*each + i))
				if err := c.Write(t.Context(), &jsonrpc.Request{ID: id, Method: "m", Params: []byte(`{"b":"` + big + `"}`)}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	got := make(chan int)
	go func() {
		r := bufio.NewReaderSize(pr, 1<<20)
		n := 0
		for n < writers*each {
			line, err := r.ReadBytes('\n')
			if err != nil {
				break
			}
			if m, err := (&conn{}).decode([][]byte{bytes.TrimSuffix(line, []byte("\n"))}); err != nil || len(m.(*jsonrpc.Request).Params) != len(big)+8 {
				t.Errorf("line %d is not one whole message: %v", n, err)
			}
			n++
		}
		got <- n
	}()
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := <-got; n != writers*each {
		t.Fatalf("%d messages read, want %d", n, writers*each)
	}
	c.Close()
	if err := c.Write(t.Context(), &jsonrpc.Request{Method: "late"}); err == nil {
		t.Fatal("a write after Close succeeded")
	}
	if _, err := c.Read(t.Context()); err == nil {
		t.Fatal("a read after Close succeeded")
	}
}

// chunker writes in small pieces, as a pipe does a large write: what one
// Write call sends is not one atomic piece.
type chunker struct{ w io.WriteCloser }

func (c chunker) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		k, err := c.w.Write(b[:min(len(b), 4096)])
		n += k
		if err != nil {
			return n, err
		}
		b = b[k:]
	}
	return n, nil
}

func (c chunker) Close() error { return c.w.Close() }
