package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// secretFakes: servers that print the secrets they were given back, in every channel.
var secretFakes = map[string]func(){
	// Review: prints its $API_KEY back on stderr so that it straddles the
	// 4 KiB line cut, then refuses to start.
	"review-leak-split": func() {
		fmt.Fprintf(os.Stderr, "%s%s\n", strings.Repeat("x", 4090), os.Getenv("API_KEY"))
		os.Exit(3)
	},
	// Review: answers tools/call with a JSON-RPC error holding $API_KEY, and
	// sends it in a progress and a log notification first.
	"review-leak-call": func() {
		rawServe(rawHandshake(func(method string, id json.RawMessage) {
			if method != "tools/call" {
				return
			}
			k := os.Getenv("API_KEY")
			fmt.Printf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"log: key %s"}}`+"\n", k)
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"bad key %s"}}`+"\n", id, k)
		}))
	},
	// Refuses initialize with a JSON-RPC error that prints its $API_KEY back.
	"leak-secret-init": func() {
		rawServe(func(method string, id json.RawMessage) {
			if method == "initialize" {
				b, _ := json.Marshal("the key " + os.Getenv("API_KEY") + " was refused")
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%s}}`+"\n", id, b)
			}
		})
	},
	// Prints its $API_KEY back on stderr, then refuses to start.
	"leak-secret": func() {
		fmt.Fprintf(os.Stderr, "fatal: the key %s was refused\n", os.Getenv("API_KEY"))
		os.Exit(3)
	},
}
