package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// hostileFakes: Fakes of the third hostile round: costs a hosted server controls.
var hostileFakes = map[string]func(){
	// Answers every tools/list with notifications/tools/list_changed:
	// $FAKEMCP_STORM of them (default 1) before the answer, while colibri's
	// list is in flight, and one after it. The list never changes. Each
	// tools/list appends a line to $FAKEMCP_LISTS, when set.
	"list-changed-storm": func() {
		n, _ := strconv.Atoi(os.Getenv("FAKEMCP_STORM"))
		n = max(n, 1)
		out := bufio.NewWriterSize(os.Stdout, 1<<16)
		const changed = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n"
		rawServe(func(method string, id json.RawMessage) {
			switch method {
			case "initialize":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"storm","version":"1"}}}`+"\n", id)
			case "tools/list":
				if p := os.Getenv("FAKEMCP_LISTS"); p != "" {
					f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
					if err != nil {
						fatal(err)
					}
					f.WriteString("list\n")
					f.Close()
				}
				for range n {
					out.WriteString(changed)
				}
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, rawTools)
				out.WriteString(changed)
			case "ping":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", id)
			}
			out.Flush()
		})
	},
	// Offers resource subscriptions, writes each resources/subscribe and
	// resources/unsubscribe it is sent as a line of $FAKEMCP_SUBS, and
	// answers a subscribe only once the file $FAKEMCP_GATE exists (reading
	// on meanwhile): a test holds subscribes on their way for as long as it
	// needs.
	"gated-subscribe": func() {
		rec := func(m string) {
			f, err := os.OpenFile(os.Getenv("FAKEMCP_SUBS"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if err != nil {
				fatal(err)
			}
			f.WriteString(m + "\n")
			f.Close()
		}
		rawServe(func(method string, id json.RawMessage) {
			switch method {
			case "initialize":
				rawReply(id, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{"subscribe":true}},"serverInfo":{"name":"gated","version":"1"}}`)
			case "tools/list":
				rawReply(id, rawTools)
			case "resources/subscribe":
				rec(method)
				go func() { // the next request is read meanwhile
					for {
						if _, err := os.Stat(os.Getenv("FAKEMCP_GATE")); err == nil {
							break
						}
						time.Sleep(5 * time.Millisecond)
					}
					rawReply(id, `{}`)
				}()
			case "resources/unsubscribe":
				rec(method)
				rawReply(id, `{}`)
			default:
				rawReply(id, `{}`)
			}
		})
	},
	// Offers resource subscriptions and dies on demand: each
	// resources/subscribe is written as a line "subscribe URI PID" of
	// $FAKEMCP_SUBS; a tools/call of "crash" is answered and the process
	// exits; one of "update" sends notifications/resources/updated for each
	// URI this process was subscribed to. With $FAKEMCP_CRASH_ON_SUBSCRIBE
	// set it exits right after answering each subscribe (a server that dies
	// whenever it is subscribed). It exits with status 0
	// ($FAKEMCP_EXIT_STATUS, for "crash"): colibri ends a request at once
	// when its server exits with an error status, which races the answer
	// written just before.
	"subscribe-crash": func() {
		var uris []string
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name string `json:"name"`
					URI  string `json:"uri"`
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
				continue
			}
			switch m.Method {
			case "initialize":
				rawReply(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{"subscribe":true}},"serverInfo":{"name":"crashing","version":"1"}}`)
			case "tools/list":
				rawReply(m.ID, `{"tools":[{"name":"crash","inputSchema":{"type":"object"}},{"name":"update","inputSchema":{"type":"object"}}]}`)
			case "resources/subscribe":
				f, err := os.OpenFile(os.Getenv("FAKEMCP_SUBS"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				if err != nil {
					fatal(err)
				}
				fmt.Fprintf(f, "subscribe %s %d\n", m.Params.URI, os.Getpid())
				f.Close()
				uris = append(uris, m.Params.URI)
				rawReply(m.ID, `{}`)
				if os.Getenv("FAKEMCP_CRASH_ON_SUBSCRIBE") != "" {
					os.Exit(0)
				}
			case "tools/call":
				if m.Params.Name == "update" {
					for _, u := range uris {
						b, _ := json.Marshal(u)
						fmt.Printf(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":%s}}`+"\n", b)
					}
				}
				rawReply(m.ID, `{"content":[{"type":"text","text":"done"}]}`)
				if m.Params.Name == "crash" {
					status, _ := strconv.Atoi(os.Getenv("FAKEMCP_EXIT_STATUS"))
					os.Exit(status)
				}
			case "server/discover":
				rawMethodNotFound(m.ID)
			default:
				rawReply(m.ID, `{}`)
			}
		}
	},
	// Offers resource subscriptions and answers them, until a tools/call:
	// it answers that, then reads on and answers nothing ever again (a
	// server wedged with subscriptions held: only a ping can tell).
	"subscribe-then-wedge": func() {
		wedged := false
		rawServe(func(method string, id json.RawMessage) {
			if wedged {
				return
			}
			switch method {
			case "initialize":
				rawReply(id, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{"subscribe":true}},"serverInfo":{"name":"wedging","version":"1"}}`)
			case "tools/list":
				rawReply(id, rawTools)
			case "tools/call":
				wedged = true
				rawReply(id, `{"content":[{"type":"text","text":"wedged"}]}`)
			default:
				rawReply(id, `{}`)
			}
		})
	},
	// Answers a call with a result go-sdk's client refuses to read, or
	// reads only by normalising it: the result named by the call's argument
	// "shape" (any other: a fine one), so that one warm process serves
	// every shape.
	"bad-result": func() {
		shapes := map[string]string{
			"unknown-type": `{"content":[{"type":"bogus","text":"relayed"}]}`,
			"null-block":   `{"content":[null]}`,
			"text-number":  `{"content":[{"type":"text","text":5}]}`,
			"content-str":  `{"content":"relayed"}`,
			// read by go-sdk's client, normalised on its way to the caller
			"null":         `null`,
			"content-null": `{"content":null}`,
			"members-null": `{"content":[{"type":"text","text":"x","annotations":null}],"isError":null,"structuredContent":null,"_meta":null}`,
			"empty":        `{}`,
			"no-text":      `{"content":[{"type":"text"}],"isError":true}`,
		}
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Arguments struct {
						Shape string `json:"shape"`
					} `json:"arguments"`
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
				continue
			}
			switch m.Method {
			case "tools/call":
				if s, ok := shapes[m.Params.Arguments.Shape]; ok {
					rawReply(m.ID, s)
				} else {
					rawReply(m.ID, `{"content":[{"type":"text","text":"fine"}]}`)
				}
			default:
				rawHandshake(func(string, json.RawMessage) {})(m.Method, m.ID)
			}
		}
	},
	// Answers a call with a number beyond float64 in its structuredContent.
	"huge-number": func() {
		rawServe(rawHandshake(func(method string, id json.RawMessage) {
			if method == "tools/call" {
				rawReply(id, `{"content":[{"type":"text","text":"big"}],"structuredContent":{"n":1e400}}`)
			}
		}))
	},
	// Reports its pid as its version (a new version at every start) and
	// lists $FAKEMCP_TOOLS_N tools (default 1000) of about 1 KB each.
	"changing-version": func() {
		n, _ := strconv.Atoi(os.Getenv("FAKEMCP_TOOLS_N"))
		if n <= 0 {
			n = 1000
		}
		var b strings.Builder
		b.WriteString(`{"tools":[`)
		desc := strings.Repeat("d", 1000)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":"tool_%d","description":"%s %d","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`, i, desc, os.Getpid())
		}
		b.WriteString(`]}`)
		list := b.String()
		rawServe(func(method string, id json.RawMessage) {
			switch method {
			case "initialize":
				rawReply(id, fmt.Sprintf(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"changing","version":"%d"}}`, os.Getpid()))
			case "tools/list":
				rawReply(id, list)
			}
		})
	},
}
