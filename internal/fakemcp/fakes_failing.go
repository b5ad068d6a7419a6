package main

import (
	"bufio"
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
	// Answers a call after FAKEMCP_NOTIFY notifications (400,000 unless
	// set), half progress under the call's token (the last one is
	// progress N of N) and half log messages, written as fast as stdout
	// takes them: the flood colibri's relay must damp.
	"notify-flood": func() {
		n, err := strconv.Atoi(os.Getenv("FAKEMCP_NOTIFY"))
		if err != nil {
			n = 400_000
		}
		notifyFlood(n)
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

// notifyFlood serves the handshake, then answers each tools/call after n
// notifications (progress under its token, when it has one, and log
// messages, one of each in turn), the last of them progress n of n.
func notifyFlood(n int) {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		if m.Method != "tools/call" {
			rawHandshake(func(string, json.RawMessage) {})(m.Method, m.ID)
			continue
		}
		token := m.Params.Meta.ProgressToken
		for i := 1; i <= n; i++ {
			if i%2 == 0 || i == n {
				if token != nil {
					fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"total":%d}}`+"\n", token, i, n)
				}
				continue
			}
			fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood line %d"}}`+"\n", i)
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"flooded"}]}}`+"\n", m.ID)
		if out.Flush() != nil {
			os.Exit(1)
		}
	}
}
