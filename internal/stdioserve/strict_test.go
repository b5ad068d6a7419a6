package stdioserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// corpusItem is one message of testdata/strict/corpus.jsonl (read by
// internal/strict's differential test too).
type corpusItem struct {
	Name    string `json:"name"`
	From    string `json:"from"`
	Message string `json:"message"` // "<FF>" stands for the byte 0xFF
	Refuse  bool   `json:"refuse"`
}

// Every caller's message of the hostile corpus that two readers could read
// differently is answered with an error naming its JSON location, and
// nothing of it reaches go-sdk; every other reaches it.
func TestCorpusFromTheCaller(t *testing.T) {
	b, err := os.ReadFile("../../testdata/strict/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var items []corpusItem
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var it corpusItem
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatal(err)
		}
		if it.From == "caller" {
			items = append(items, it)
		}
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn, err := (&Transport{Reader: inR, Writer: outW}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lines := make(chan string, 100)
	go func() {
		r := bufio.NewReader(outR)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- l
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("nothing written within 10s")
			return ""
		}
	}
	for i, it := range items {
		// Ids of their own, so that no call is refused as reusing one.
		msg := strings.ReplaceAll(strings.ReplaceAll(it.Message, "<FF>", "\xff"), `"id":1,`, fmt.Sprintf(`"id":%d,`, 1000+i))
		go io.WriteString(inW, msg+"\n")
		if it.Refuse {
			line := next()
			var r struct {
				Error *jsonrpc.Error `json:"error"`
			}
			if json.Unmarshal([]byte(line), &r) != nil || r.Error == nil || !strings.Contains(r.Error.Message, "invalid request: at /") ||
				(r.Error.Code != jsonrpc.CodeInvalidRequest && r.Error.Code != jsonrpc.CodeInvalidParams) {
				t.Errorf("%s: answered %s, want -32600 or -32602 naming the location", it.Name, strings.TrimSpace(line))
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		m, err := conn.Read(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: not handed on: %v", it.Name, err)
		}
		if want := int64(1000 + i); strings.Contains(msg, fmt.Sprintf(`"id":%d,`, want)) {
			if r, ok := m.(*jsonrpc.Request); !ok || r.ID.Raw() != want {
				t.Fatalf("%s: read %+v, want the message of id %d (a refused one was handed on?)", it.Name, m, want)
			}
		}
		if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
			// Answered, so that its id is free again.
			go conn.Write(context.Background(), &jsonrpc.Response{ID: r.ID, Result: json.RawMessage(`{}`)})
			next()
		}
	}
	// Nothing of a refused message was handed on: the next message read is
	// the one written next.
	go io.WriteString(inW, `{"jsonrpc":"2.0","id":"last","method":"ping"}`+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := conn.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); err != nil || !ok || r.ID.Raw() != "last" {
		t.Fatalf("after the corpus, read %+v (%v), want the ping", m, err)
	}
}
