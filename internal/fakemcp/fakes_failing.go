package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// failingFakes: servers that hang, die, flood or break the protocol at a phase of their own.
var failingFakes = map[string]func(){
	"hang-init": func() { rawServe(func(string, json.RawMessage) {}) },
	"hang-list": func() {
		rawServe(func(method string, id json.RawMessage) {
			if method == "initialize" {
				rawReply(id, rawInit)
			}
		})
	},
	"hang-call": func() { rawServe(rawHandshake(func(string, json.RawMessage) {})) },
	// Exits before initialize, saying why on stderr.
	"exit-early": func() {
		fmt.Fprintln(os.Stderr, "fatal: missing API key")
		os.Exit(3)
	},
	"exit-mid-call": func() {
		rawServe(rawHandshake(func(string, json.RawMessage) {
			fmt.Fprintln(os.Stderr, "segmentation fault")
			os.Exit(139)
		}))
	},
	// Fails to start until the file $HEALTHY_MARKER exists.
	"broken-until-marker": func() {
		if _, err := os.Stat(os.Getenv("HEALTHY_MARKER")); err != nil {
			fmt.Fprintln(os.Stderr, "not ready")
			os.Exit(3)
		}
		serveTools(nil)
	},
	// Writes a banner on stdout before speaking MCP.
	"banner": func() {
		fmt.Println("Starting demo server v1.0 ...")
		serveTools(nil)
	},
	// Floods stderr (10 MB), then serves.
	"stderr-flood": func() {
		line := strings.Repeat("x", 1000) + "\n"
		for range 10_000 {
			os.Stderr.WriteString(line)
		}
		fmt.Fprintln(os.Stderr, "last words before serving")
		serveTools(nil)
	},
	// Floods stderr (50 MB) while answering a call, then answers.
	"stderr-flood-call": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			line := strings.Repeat("e", 1023) + "\n"
			for range 50_000 {
				os.Stderr.WriteString(line)
			}
			rawReply(id, `{"content":[{"type":"text","text":"survived the flood"}]}`)
		}))
	},
	// Answers a call with 100 MB on one line.
	"stdout-flood": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			chunk := strings.Repeat("f", 1<<20)
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
			for range 100 {
				if _, err := os.Stdout.WriteString(chunk); err != nil {
					os.Exit(1)
				}
			}
		}))
	},
	"invalid-jsonrpc": func() {
		rawServe(rawHandshake(func(string, json.RawMessage) {
			fmt.Println(`{"this":"is json","but":"not json-rpc"}`)
		}))
	},
	"wrong-ids": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			rawReply(json.RawMessage(`"not-`+strings.Trim(string(id), `"`)+`"`), `{"content":[]}`)
		}))
	},
	// Answers a byte at a time, 100 ms apart.
	"drip": func() {
		rawServe(rawHandshake(func(_ string, id json.RawMessage) {
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"drip drip drip"}]}}`+"\n", id)
			for i := range len(msg) {
				os.Stdout.WriteString(msg[i : i+1])
				time.Sleep(100 * time.Millisecond)
			}
		}))
	},
	"close-stdout": func() {
		rawServe(rawHandshake(func(string, json.RawMessage) {
			os.Stdout.Close()
		}))
	},
	// Answers the handshake, then never reads stdin again.
	"no-stdin": func() {
		handshakeOnly()
		time.Sleep(time.Hour)
	},
	// Answers the handshake, then reads its stdin slowly and never answers:
	// FAKEMCP_READ bytes every FAKEMCP_EVERY_MS (a server that makes
	// progress, at a trickle).
	"slow-stdin": func() {
		r := handshakeOnly()
		size, _ := strconv.Atoi(os.Getenv("FAKEMCP_READ"))
		every, _ := strconv.Atoi(os.Getenv("FAKEMCP_EVERY_MS"))
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(r, buf); err != nil {
				time.Sleep(time.Hour)
			}
			time.Sleep(time.Duration(every) * time.Millisecond)
		}
	},
}
