package tools_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/stdioserve"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// rawFace is colibri's stdio face driven with raw lines, as a hostile
// caller drives it, with an audit log and a log of its own.
type rawFace struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string // what the face writes, line by line
	audit string
}

func newRawFace(t *testing.T, table *bulk.Table, reg *registry.Registry, aggregate bool) *rawFace {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := host.New(host.Options{Timeout: 30 * time.Second, TerminateGrace: 200 * time.Millisecond, Bulk: table})
	svc := tools.New(tools.Options{Registry: func() (*registry.Registry, error) { return reg, nil },
		ConfigPath: "in-memory", Host: h, ExternalCall: true, Bulk: table, Audit: w, Aggregate: aggregate})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	ss, err := svc.NewServer("test").Connect(ctx, &stdioserve.Transport{Reader: inR, Writer: outW, Bulk: table}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &rawFace{t: t, in: inW, lines: make(chan string, 100), audit: path}
	go f.read(outR)
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
		for range f.lines { // the reader ends before the test does
		}
		ss.Close()
		cancel()
		svc.Close()
		h.Close()
		w.Close()
	})
	f.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	f.until(`"init"`)
	f.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return f
}

func (f *rawFace) send(line string) {
	f.t.Helper()
	if _, err := io.WriteString(f.in, line+"\n"); err != nil {
		f.t.Fatalf("writing: %v", err)
	}
}

// until reads lines until the response whose id is the JSON id, and
// returns it. (Every line the face writes is read as it comes, and checked
// for a reference: the face must never wait on the test.)
func (f *rawFace) until(id string) string {
	f.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-f.lines:
			if !ok {
				f.t.Fatalf("the face's output ended before the answer for id %s", id)
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal([]byte(l), &m) == nil && string(m.ID) == id {
				return l
			}
		case <-deadline:
			f.t.Fatalf("no answer for id %s within 20s", id)
			return ""
		}
	}
}

// read passes on every line the face writes, failing the test for one
// that holds a reference.
func (f *rawFace) read(out io.Reader) {
	defer close(f.lines)
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return
		}
		if strings.Contains(l, "colibri-bulk-") {
			f.t.Errorf("a reference was written to the caller: %.300q", l)
		}
		f.lines <- l
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// hostileLines are requests a careless or hostile caller sends, with large
// strings where colibri might not expect them, and the id each answer has
// ("" for none).
func hostileLines(aggregate bool) [][2]string {
	big := jsonString(bigText(10 << 10))
	bigName := jsonString(strings.Repeat("n", 10<<10))
	call := func(id, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tools.CallToolTool + `","arguments":` + args + `}}`
	}
	hosted := func(tool, args string) string {
		return `{"server":"warm","name":"` + tool + `","arguments":` + args + `}`
	}
	lines := [][2]string{
		{call("1", hosted("echo", `{"message":`+big+`}`)), "1"},
		{call("2", hosted("echo", big)), "2"},                                   // arguments a string
		{call("3", hosted("echo", `[`+big+`,`+big+`]`)), "3"},                   // arguments an array
		{call("4", `{"server":`+bigName+`,"name":"echo","arguments":{}}`), "4"}, // unknown server
		{call("5", `{"server":"warm","name":`+bigName+`,"arguments":{}}`), "5"}, // unknown tool
		{call("6", hosted("echo", `{"message":[`+big+`]}`)), "6"},               // schema refuses
		{call("7", hosted("echo", `{"message":`+big+`,"extra":{"deep":[[[{"x":`+big+`}]]]}}`)), "7"},
		{call("8", hosted("mirror", `{"message":`+big+`,"n":1.50,"k\u2028":`+big+`}`)), "8"},
		{call("9", big), "9"}, // call_tool's own input a string
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"` + tools.ListToolsTool + `","arguments":{"server":` + bigName + `}}}`, "10"},
		{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"` + tools.ServersTool + `","arguments":{"junk":` + big + `}}}`, "11"},
		{`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"no_such_tool","arguments":{"x":` + big + `}}}`, "12"},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"` + tools.CallToolTool + `","arguments":` + hosted("echo", `{"message":`+big+`}`) + `}}`, ""},
		{`{"jsonrpc":"2.0","id":13,"result":{"content":[{"type":"text","text":` + big + `}]}}`, ""}, // an answer to nothing
		{call("14", hosted("echo", `{"message":`+big+`,"message":"short"}`)), "14"},                 // a key twice
		{call("15", `{"server":"warm","name":"echo","arguments":{"message":`+big+`},"name":"echo"}`), "15"},
		// An id no answer can carry, refused by the face.
		{call("9007199254740993", hosted("echo", `{"message":`+big+`}`)), ""},
		// An id in use: the call in flight keeps its strings, the second
		// is refused, and the first is cancelled (no answer).
		{call("16", hosted("mirror", `{"message":`+big+`,"ms":60000}`)), ""},
		{call("16", hosted("mirror", `{"message":`+big+`}`)), ""},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":16}}`, ""},
	}
	if aggregate {
		lines = append(lines,
			[2]string{`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"warm__echo","arguments":{"message":` + big + `}}}`, "20"},
			[2]string{`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"warm__echo","arguments":` + big + `}}`, "21"},
			[2]string{`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"warm__mirror","arguments":{"message":` + big + `}}}`, "22"},
		)
	}
	return lines
}

// runHostile sends the hostile lines and returns the answers by id.
func runHostile(t *testing.T, table *bulk.Table, aggregate bool) (map[string]any, string) {
	f := newRawFace(t, table, warmFake(), aggregate)
	answers := map[string]any{}
	for k, l := range hostileLines(aggregate) {
		f.send(l[0])
		if l[1] == "" {
			// No answer: a ping keeps the order.
			id := `"sync` + jsonInt(k) + `"`
			f.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
			f.until(id)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(f.until(l[1])), &v); err != nil {
			t.Fatal(err)
		}
		answers[l[1]] = v
	}
	return answers, f.audit
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// Whatever a caller sends, colibri answers it as it would without the
// bulk table, never writes a reference (to the caller, or in the audit
// log), and keeps no string once every call is answered: over stdio (one
// line at a time), and over Streamable HTTP (each line a POST).
func TestBulkHostileCallerSeesNoDifference(t *testing.T) {
	t.Parallel()
	for face, run := range map[string]func(*testing.T, *bulk.Table, bool) (map[string]any, string){
		"stdio": runHostile,
		"http":  runHostileHTTP,
	} {
		t.Run(face, func(t *testing.T) {
			t.Parallel()
			for _, aggregate := range []bool{false, true} {
				want, _ := run(t, nil, aggregate)
				table := bulk.New(bulkMin)
				got, auditPath := run(t, table, aggregate)
				if table.Lifted() == 0 {
					t.Fatal("nothing was lifted")
				}
				for id, w := range want {
					if !reflect.DeepEqual(got[id], w) {
						t.Errorf("aggregate %v: answer %s differs with the bulk table:\n got %.600v\nwant %.600v", aggregate, id, got[id], w)
					}
				}
				waitEmpty(t, table)
				b, err := os.ReadFile(auditPath)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte("colibri-bulk-")) {
					t.Errorf("the audit log holds a reference: %.500q", b)
				}
			}
		})
	}
}

// Many large calls at once on one warm server, some cancelled half way:
// each answer holds its own call's strings, and nothing stays behind.
func TestBulkParallelCallsOnOneWarmServer(t *testing.T) {
	t.Parallel()
	forFaces(t, func(t *testing.T, face string) {
		table := bulk.New(bulkMin)
		cs := faceWithBulk(t, face, table, warmFake(), false)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				msg := strconv.Itoa(i) + bigText(20<<10+i*1000)
				args := map[string]any{"message": msg, "n": i}
				ctx := t.Context()
				if i%4 == 3 {
					// Cancelled while the hosted server holds it.
					args["ms"] = 60_000
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
					defer cancel()
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.CallToolTool,
					Arguments: map[string]any{"server": "warm", "name": "mirror", "arguments": args}})
				if i%4 == 3 {
					if err == nil {
						t.Errorf("call %d: not cancelled: %+v", i, res)
					}
					return
				}
				if err != nil || res.IsError {
					t.Errorf("call %d: %v %+v", i, err, res)
					return
				}
				sc, _ := res.StructuredContent.(map[string]any)
				if sc["message"] != msg {
					t.Errorf("call %d: structuredContent holds another message (%.20q)", i, sc["message"])
				}
				var echoed map[string]any
				if err := json.Unmarshal([]byte(textOf(t, res)), &echoed); err != nil || echoed["message"] != msg {
					t.Errorf("call %d: text holds another message (%v)", i, err)
				}
			}()
		}
		wg.Wait()
		waitEmpty(t, table)
	})
}
