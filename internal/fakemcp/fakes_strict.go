package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// strictFakes: servers whose messages two readers could read differently
// (docs/protocol.md, "Strict reading").
var strictFakes = map[string]func(){
	// Answers the request whose method is $FAKEMCP_STRICT_AT with the line
	// $FAKEMCP_STRICT_LINE, its "%ID%" replaced by the request's id, and
	// every other request as rawHandshake does (tools/call: text "clean").
	// With FAKEMCP_STRICT_AT=notify, the line is sent (a notification)
	// before the answer to each tools/call.
	"strict": func() {
		at, line := os.Getenv("FAKEMCP_STRICT_AT"), os.Getenv("FAKEMCP_STRICT_LINE")
		send := func(id json.RawMessage) { fmt.Println(strings.ReplaceAll(line, "%ID%", string(id))) }
		answer := func(method string, id json.RawMessage) {
			if method == "tools/call" {
				rawReply(id, `{"content":[{"type":"text","text":"clean"}]}`)
			}
		}
		rawServe(func(method string, id json.RawMessage) {
			switch {
			case method == at:
				send(id)
			case at == "notify" && method == "tools/call":
				fmt.Println(line)
				answer(method, id)
			default:
				rawHandshake(answer)(method, id)
			}
		})
	},
}
