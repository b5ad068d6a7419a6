package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolFakes: Fakes that speak or ignore MCP 2026-07-28, and the hosted
// side of aggregate mode's protocol details (_meta, ui:// resources).
var protocolFakes = map[string]func(){
	// go-sdk's server restricted to 2026-07-28: tool "seen" answers with
	// the protocol version and the client capabilities the request carried
	// in its _meta (JSON), and "echo" with "Echo: MESSAGE".
	"modern-only": func() {
		s := mcp.NewServer(&mcp.Implementation{Name: "modern", Version: os.Getenv("FAKEMCP_SERVER_VERSION") + "1"},
			&mcp.ServerOptions{SupportedProtocolVersions: []string{"2026-07-28"}})
		mcp.AddTool(s, &mcp.Tool{Name: "seen"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			meta := req.Params.GetMeta()
			b, _ := json.Marshal(map[string]any{"version": meta[mcp.MetaKeyProtocolVersion], "capabilities": meta[mcp.MetaKeyClientCapabilities]})
			return text(string(b)), nil, nil
		})
		type msg struct {
			Message string `json:"message"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in msg) (*mcp.CallToolResult, any, error) {
			return text("Echo: " + in.Message), nil, nil
		})
		// "ask" needs its client's input (MRTR): it answers input_required
		// with an elicitation, then, retried with the answer, with it (JSON).
		mcp.AddTool(s, &mcp.Tool{Name: "ask"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if len(req.Params.InputResponses) == 0 {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "your name?",
					RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil, nil
			}
			b, _ := json.Marshal(req.Params.InputResponses["q"])
			return text(string(b)), nil, nil
		})
		_ = s.Run(context.Background(), &mcp.StdioTransport{})
	},
	// A server written before 2026-07-28 that ignores every request it does
	// not know (server/discover included: no answer at all), appending the
	// method of each such request to FAKEMCP_IGNORED_LOG. Its version is
	// what FAKEMCP_VERSION_FILE says (default 1). Tool "echo".
	"legacy-silent": func() {
		version := "1"
		if b, err := os.ReadFile(os.Getenv("FAKEMCP_VERSION_FILE")); err == nil {
			version = strings.TrimSpace(string(b))
		}
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Arguments struct {
						Message string `json:"message"`
					} `json:"arguments"`
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
				continue
			}
			switch m.Method {
			case "initialize":
				rawReply(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"`+version+`"}}`)
			case "tools/list":
				rawReply(m.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`)
			case "tools/call":
				b, _ := json.Marshal("Echo: " + m.Params.Arguments.Message)
				rawReply(m.ID, `{"content":[{"type":"text","text":`+string(b)+`}]}`)
			case "ping":
				rawReply(m.ID, `{}`)
			default:
				if f, err := os.OpenFile(os.Getenv("FAKEMCP_IGNORED_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
					fmt.Fprintln(f, m.Method)
					f.Close()
				}
			}
		}
	},
	// Lists the tools of FAKEMCP_TOOLS_FILE (a tools/list result, one
	// JSON document) after FAKEMCP_LIST_DELAY_MS, and once the file
	// FAKEMCP_GATE exists when that is set (then it creates
	// FAKEMCP_GATE.listed once it has answered), answers a call with
	// "called NAME ARGS", and serves every ui:// resource it is asked for
	// as HTML naming the URI (MCP Apps' text/html;profile=mcp-app).
	"listed-apps": func() {
		delay, _ := strconv.Atoi(os.Getenv("FAKEMCP_LIST_DELAY_MS"))
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name      string          `json:"name"`
					URI       string          `json:"uri"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
				continue
			}
			switch m.Method {
			case "server/discover":
				rawMethodNotFound(m.ID)
			case "initialize":
				rawReply(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"apps","version":"1"}}`)
			case "tools/list":
				time.Sleep(time.Duration(delay) * time.Millisecond)
				awaitGate()
				b, err := os.ReadFile(os.Getenv("FAKEMCP_TOOLS_FILE"))
				if err != nil {
					fatal(err)
				}
				rawReply(m.ID, strings.ReplaceAll(string(b), "\n", ""))
				if gate := os.Getenv("FAKEMCP_GATE"); gate != "" {
					if err := os.WriteFile(gate+".listed", nil, 0o644); err != nil {
						fatal(err)
					}
				}
			case "tools/call":
				b, _ := json.Marshal("called " + m.Params.Name + " " + string(m.Params.Arguments))
				rawReply(m.ID, fmt.Sprintf(`{"content":[{"type":"text","text":%s}]}`, b))
			case "resources/read":
				if !strings.HasPrefix(m.Params.URI, "ui://") {
					fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32002,"message":"Resource not found"}}`+"\n", m.ID)
					continue
				}
				uri, _ := json.Marshal(m.Params.URI)
				html, _ := json.Marshal("<html>" + m.Params.URI + "</html>")
				rawReply(m.ID, fmt.Sprintf(`{"contents":[{"uri":%s,"mimeType":"text/html;profile=mcp-app","text":%s}]}`, uri, html))
			case "ping":
				rawReply(m.ID, `{}`)
			}
		}
	},
}
