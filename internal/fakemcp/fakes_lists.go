package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// listFakes: servers whose tool lists are endless, hostile or odd.
var listFakes = map[string]func(){
	// Hands out tools/list pages forever, each with a new cursor and a few
	// tools of 10 KB descriptions.
	"endless-pages": func() {
		page := 0
		rawServe(func(method string, id json.RawMessage) {
			switch method {
			case "initialize":
				rawReply(id, rawInit)
			case "tools/list":
				page++
				desc := strings.Repeat("d", 10<<10)
				var tools []string
				for i := range 10 {
					tools = append(tools, fmt.Sprintf(`{"name":"t%d_%d","description":%q,"inputSchema":{"type":"object"}}`, page, i, desc))
				}
				rawReply(id, fmt.Sprintf(`{"tools":[%s],"nextCursor":"c%d"}`, strings.Join(tools, ","), page))
			}
		})
	},
	// Hands out the same cursor forever, one small tool a page.
	"cursor-loop": func() {
		rawServe(func(method string, id json.RawMessage) {
			switch method {
			case "initialize":
				rawReply(id, rawInit)
			case "tools/list":
				rawReply(id, `{"tools":[{"name":"any","inputSchema":{"type":"object"}}],"nextCursor":"again"}`)
			}
		})
	},
	// Lists one tool, "any", whose inputSchema is hostile: of the shape
	// $FAKEMCP_SCHEMA names (wide: an anyOf of ~1.3 MB; deep: 400 levels of
	// nesting in 15 KB), answers every call with "called".
	"huge-schema": func() {
		tools := fmt.Sprintf(`{"tools":[{"name":"any","inputSchema":%s}]}`, hostileSchema(os.Getenv("FAKEMCP_SCHEMA")))
		rawServe(func(method string, id json.RawMessage) {
			switch method {
			case "initialize":
				rawReply(id, rawInit)
			case "tools/list":
				rawReply(id, tools)
			case "tools/call":
				rawReply(id, `{"content":[{"type":"text","text":"called"}]}`)
			}
		})
	},
	// Lists tools of every shape a hosted server may send, for aggregate
	// mode: one well-formed tool with everything a tool may declare, names
	// an editor refuses, and schemas go-sdk's AddTool would panic on (not
	// an object, none at all, a bad x-mcp-header: that one go-sdk's client
	// already leaves out of the list). Every call answers "called".
	"odd-tools": func() {
		tools := `{"tools":[
{"name":"full","title":"A full tool","description":"Declares everything.","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]},"outputSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}},"annotations":{"readOnlyHint":true,"title":"annotated"},"icons":[{"src":"data:image/png;base64,AA==","mimeType":"image/png"}]},
{"name":"dotted.name/with space","inputSchema":{"type":"object"}},
{"name":"stringly","inputSchema":{"type":"string"}},
{"name":"schemaless"},
{"name":"bad-header","inputSchema":{"type":"object","properties":{"x":{"type":"object","x-mcp-header":"X-Thing"}}}}
]}`
		rawServe(func(method string, id json.RawMessage) {
			switch method {
			case "initialize":
				rawReply(id, rawInit)
			case "tools/list":
				rawReply(id, strings.ReplaceAll(tools, "\n", ""))
			case "tools/call":
				rawReply(id, `{"content":[{"type":"text","text":"called"}],"structuredContent":{"ok":true}}`)
			}
		})
	},
	// Lists whatever $FAKEMCP_TOOLS_FILE holds (a tools/list result, read
	// again for every tools/list, so that a test can change the list between
	// a list and a call). A call answers "called NAME ARGUMENTS"; a tool whose
	// name begins "fail" answers it with isError.
	"listed-tools": func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name      string          `json:"name"`
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
				rawReply(m.ID, rawInit)
			case "tools/list":
				b, err := os.ReadFile(os.Getenv("FAKEMCP_TOOLS_FILE"))
				if err != nil {
					fatal(err)
				}
				rawReply(m.ID, strings.ReplaceAll(string(b), "\n", ""))
			case "tools/call":
				b, _ := json.Marshal("called " + m.Params.Name + " " + string(m.Params.Arguments))
				rawReply(m.ID, fmt.Sprintf(`{"content":[{"type":"text","text":%s}],"isError":%t}`, b, strings.HasPrefix(m.Params.Name, "fail")))
			case "ping":
				rawReply(m.ID, `{}`)
			}
		}
	},
}

// hostileSchema is a JSON Schema that compiles slowly: quadratic (wide) or
// worse (deep) in santhosh-tekuri/jsonschema.
func hostileSchema(shape string) string {
	var b strings.Builder
	switch shape {
	case "deep":
		b.WriteString(strings.Repeat(`{"type":"object","properties":{"a":`, 400))
		b.WriteString(`{}`)
		b.WriteString(strings.Repeat(`}}`, 400))
	default: // wide
		b.WriteString(`{"type":"object","properties":{"x":{"anyOf":[`)
		for i := 0; b.Len() < 1300<<10; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"const":%d}`, i)
		}
		b.WriteString(`]}}}`)
	}
	return b.String()
}
