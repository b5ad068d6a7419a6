package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// handshakeOnly answers initialize and tools/list on stdin, then returns
// the reader, positioned after them.
func handshakeOnly() *bufio.Reader {
	r := bufio.NewReader(os.Stdin)
	for n := 0; n < 2; {
		line, err := r.ReadBytes('\n')
		if err != nil {
			os.Exit(1)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) == nil && m.ID != nil {
			rawHandshake(func(string, json.RawMessage) {})(m.Method, m.ID)
			if m.Method != "server/discover" { // answered, and not counted
				n++
			}
		}
	}
	return r
}

const (
	rawInit  = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`
	rawTools = `{"tools":[{"name":"any","inputSchema":{"type":"object"}}]}`
)

// rawServe speaks just enough MCP by hand to misbehave precisely: handle
// gets each request's method and raw id. It never leaves by itself.
func rawServe(handle func(method string, id json.RawMessage)) {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		if m.Method == "server/discover" {
			rawMethodNotFound(m.ID) // a server before MCP 2026-07-28, as most answer it
			continue
		}
		handle(m.Method, m.ID)
	}
	time.Sleep(time.Hour)
}

func rawReply(id json.RawMessage, result string) {
	fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
}

// rawHandshake answers initialize and tools/list, then passes the rest on.
func rawHandshake(then func(method string, id json.RawMessage)) func(string, json.RawMessage) {
	return func(method string, id json.RawMessage) {
		switch method {
		case "initialize":
			rawReply(id, rawInit)
		case "tools/list":
			rawReply(id, rawTools)
		case "server/discover":
			// As most servers before MCP 2026-07-28 answer it (the
			// TypeScript SDK's); legacy-silent is the one that ignores it.
			rawMethodNotFound(id)
		default:
			then(method, id)
		}
	}
}

func rawMethodNotFound(id json.RawMessage) {
	fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", id)
}
