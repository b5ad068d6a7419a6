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

// protocolFakes: Fakes that speak or ignore MCP 2026-07-28, and the hosted
// side of aggregate mode's protocol details (_meta, ui:// resources).
var protocolFakes = map[string]func(){
	// Lists the tools of FAKEMCP_TOOLS_FILE (a tools/list result, one
	// JSON document) after FAKEMCP_LIST_DELAY_MS, answers a call with
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
			case "initialize":
				rawReply(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"apps","version":"1"}}`)
			case "tools/list":
				time.Sleep(time.Duration(delay) * time.Millisecond)
				b, err := os.ReadFile(os.Getenv("FAKEMCP_TOOLS_FILE"))
				if err != nil {
					fatal(err)
				}
				rawReply(m.ID, strings.ReplaceAll(string(b), "\n", ""))
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
