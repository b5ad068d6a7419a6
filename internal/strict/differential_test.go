package strict_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/strict"
)

// Item is one message of the hostile corpus, testdata/strict/corpus.jsonl,
// which the fuzz target and the end-to-end tests of both faces read too.
type Item struct {
	Name    string `json:"name"`
	From    string `json:"from"`    // "caller" or "server"
	Answers string `json:"answers"` // the method a response answers ("notify": a notification)
	Message string `json:"message"` // "<FF>" stands for the byte 0xFF
	Refuse  bool   `json:"refuse"`
}

// Bytes is the message as sent.
func (it Item) Bytes() []byte { return []byte(strings.ReplaceAll(it.Message, "<FF>", "\xff")) }

func (it Item) Side() strict.Side {
	if it.From == "server" {
		return strict.FromServer
	}
	return strict.FromCaller
}

func corpus(t testing.TB) []Item {
	t.Helper()
	f, err := os.Open("../../testdata/strict/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var items []Item
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var it Item
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			t.Fatalf("corpus line %d: %v", len(items)+1, err)
		}
		items = append(items, it)
	}
	return items
}

// Every item is read by colibri as the corpus says.
func TestCorpus(t *testing.T) {
	for _, it := range corpus(t) {
		fixed, p := strict.Check(it.Bytes(), it.Side())
		if (p != nil) != it.Refuse {
			t.Errorf("%s: refused = %v (%v), want %v", it.Name, p != nil, p, it.Refuse)
		}
		if fixed != nil {
			t.Errorf("%s: repaired, which no corpus item is meant to be", it.Name)
		}
	}
}

// The differential: the same corpus read by go-sdk (its decoder and its
// types, as colibri and a Go server read them), the official TypeScript SDK
// (JSON.parse and its zod schemas, testdata/peers/strict-read.mjs) and a
// reader that keeps the first of two equal keys (as several parsers in C,
// Java and Rust do). Wherever any two of them read a message differently
// — or one refuses what another reads — colibri refuses it; whatever
// colibri passes, all three read alike.
func TestDifferential(t *testing.T) {
	items := corpus(t)
	ts := typescriptReadings(t)
	if len(ts) != len(items) {
		t.Fatalf("the TypeScript SDK read %d items of %d", len(ts), len(items))
	}
	differ := 0
	for i, it := range items {
		readings := map[string]string{
			"go-sdk":     goSDKReading(it),
			"typescript": ts[i],
			"first-wins": firstWinsReading(it),
		}
		agree := readings["go-sdk"] == readings["typescript"] && readings["typescript"] == readings["first-wins"]
		_, p := strict.Check(it.Bytes(), it.Side())
		if !agree {
			differ++
			if p == nil {
				t.Errorf("%s: the readers differ and colibri passes it:\n  go-sdk:     %s\n  typescript: %s\n  first-wins: %s", it.Name, readings["go-sdk"], readings["typescript"], readings["first-wins"])
			}
		}
		if p == nil && !agree {
			continue
		}
		if p == nil && strings.HasPrefix(readings["go-sdk"], "refused") {
			t.Errorf("%s: colibri passes what every reader refuses: %s", it.Name, readings["go-sdk"])
		}
	}
	// The corpus is hostile: most of it is read two ways, which is what
	// the test is about.
	if differ < len(items)/2 {
		t.Errorf("only %d of %d items are read differently: the readers are not being compared", differ, len(items))
	}
}

func typescriptReadings(t *testing.T) []string {
	t.Helper()
	peers, _ := filepath.Abs("../../testdata/peers")
	_, statErr := os.Stat(filepath.Join(peers, "node_modules/@modelcontextprotocol/sdk/package.json"))
	_, nodeErr := exec.LookPath("node")
	if statErr != nil || nodeErr != nil {
		msg := "the TypeScript SDK is not installed (run `make peers`; needs node and npm)"
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: in CI this is a failure, not a skip", msg)
		}
		t.Skip("SKIPPING: " + msg)
	}
	cmd := exec.Command("node", "strict-read.mjs", "../strict/corpus.jsonl")
	cmd.Dir = peers
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("strict-read.mjs: %v\n%s", err, stderr.String())
	}
	var readings []string
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		var r struct {
			Reading any    `json:"reading"`
			Refused string `json:"refused"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("strict-read.mjs wrote %q: %v", line, err)
		}
		if r.Refused != "" {
			readings = append(readings, "refused")
		} else {
			readings = append(readings, canonical(normalize(r.Reading)))
		}
	}
	return readings
}

// goSDKReading is how go-sdk reads the item: its JSON-RPC decoder, then the
// params or result decoded into go-sdk's own types (encoding/json rules:
// the last of two equal keys, keys matched whatever their case).
func goSDKReading(it Item) string {
	msg, err := jsonrpc.DecodeMessage(it.Bytes())
	if err != nil {
		return "refused"
	}
	r := map[string]any{}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		r["method"] = m.Method
		if m.ID.IsValid() {
			r["id"] = m.ID.Raw()
		}
		var p struct {
			Meta          map[string]any `json:"_meta"`
			Name          string         `json:"name"`
			URI           string         `json:"uri"`
			Arguments     any            `json:"arguments"`
			ProgressToken any            `json:"progressToken"`
			RequestID     any            `json:"requestId"`
			ClientInfo    *struct {
				Name string `json:"name"`
			} `json:"clientInfo"`
			Progress *float64 `json:"progress"`
		}
		if len(m.Params) > 0 {
			if err := json.Unmarshal(m.Params, &p); err != nil {
				return "refused"
			}
			// go-sdk's typed params, for the methods whose types hold them.
			var typed any
			switch m.Method {
			case "tools/call":
				typed = &mcp.CallToolParams{}
			case "resources/read":
				typed = &mcp.ReadResourceParams{}
			case "prompts/get":
				typed = &mcp.GetPromptParams{}
			case "initialize":
				typed = &mcp.InitializeParams{}
			case "notifications/progress":
				typed = &mcp.ProgressNotificationParams{}
			case "notifications/cancelled":
				typed = &mcp.CancelledParams{}
			}
			if typed != nil && json.Unmarshal(m.Params, typed) != nil {
				return "refused"
			}
		}
		set(r, "name", p.Name)
		set(r, "uri", p.URI)
		set(r, "arguments", p.Arguments)
		set(r, "requestId", p.RequestID)
		if p.ClientInfo != nil {
			set(r, "clientInfo", p.ClientInfo.Name)
		}
		if p.Progress != nil {
			r["progress"] = *p.Progress
		}
		if p.Meta != nil {
			set(r, "progressToken", p.Meta["progressToken"])
		}
		set(r, "progressToken", p.ProgressToken)
	case *jsonrpc.Response:
		r["id"] = m.ID.Raw()
		if m.Error != nil {
			var e *jsonrpc.Error
			if !errors.As(m.Error, &e) {
				return "refused"
			}
			r["code"], r["message"] = e.Code, e.Message
			break
		}
		switch it.Answers {
		case "tools/list":
			var res mcp.ListToolsResult
			if json.Unmarshal(m.Result, &res) != nil {
				return "refused"
			}
			var tools []any
			for _, tool := range res.Tools {
				x := map[string]any{"name": tool.Name, "schema": tool.InputSchema}
				set(x, "description", tool.Description)
				if tool.Annotations != nil && tool.Annotations.ReadOnlyHint {
					x["readOnly"] = true
				}
				tools = append(tools, x)
			}
			set(r, "tools", tools)
		case "tools/call":
			var res mcp.CallToolResult
			if json.Unmarshal(m.Result, &res) != nil {
				return "refused"
			}
			var texts []any
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					texts = append(texts, tc.Text)
				}
			}
			set(r, "texts", texts)
			if res.IsError {
				r["isError"] = true
			}
			set(r, "structured", res.StructuredContent)
		case "initialize":
			var res mcp.InitializeResult
			if json.Unmarshal(m.Result, &res) != nil {
				return "refused"
			}
			r["protocolVersion"] = res.ProtocolVersion
			r["capabilities"] = res.Capabilities
		}
	}
	return canonical(normalize(r))
}

// firstWinsReading reads the item keeping the first of two equal keys,
// matching keys exactly.
func firstWinsReading(it Item) string {
	v, err := decodeFirstWins(json.NewDecoder(bytes.NewReader(it.Bytes())))
	if err != nil {
		return "refused"
	}
	m, _ := v.(map[string]any)
	r := map[string]any{}
	if method, ok := m["method"].(string); ok {
		r["method"] = method
		set(r, "id", m["id"])
		p, _ := m["params"].(map[string]any)
		set(r, "name", p["name"])
		set(r, "uri", p["uri"])
		set(r, "arguments", p["arguments"])
		set(r, "requestId", p["requestId"])
		if ci, ok := p["clientInfo"].(map[string]any); ok {
			set(r, "clientInfo", ci["name"])
		}
		set(r, "progress", p["progress"])
		if meta, ok := p["_meta"].(map[string]any); ok {
			set(r, "progressToken", meta["progressToken"])
		}
		set(r, "progressToken", p["progressToken"])
		return canonical(normalize(r))
	}
	set(r, "id", m["id"])
	if e, ok := m["error"].(map[string]any); ok {
		r["code"], r["message"] = e["code"], e["message"]
		return canonical(normalize(r))
	}
	res, _ := m["result"].(map[string]any)
	switch it.Answers {
	case "tools/list":
		list, _ := res["tools"].([]any)
		var tools []any
		for _, x := range list {
			tool, _ := x.(map[string]any)
			y := map[string]any{"name": tool["name"], "schema": tool["inputSchema"]}
			set(y, "description", tool["description"])
			if a, ok := tool["annotations"].(map[string]any); ok && a["readOnlyHint"] == true {
				y["readOnly"] = true
			}
			tools = append(tools, y)
		}
		set(r, "tools", tools)
	case "tools/call":
		list, _ := res["content"].([]any)
		var texts []any
		for _, x := range list {
			if c, ok := x.(map[string]any); ok && c["type"] == "text" {
				texts = append(texts, c["text"])
			}
		}
		set(r, "texts", texts)
		if res["isError"] == true {
			r["isError"] = true
		}
		set(r, "structured", res["structuredContent"])
	case "initialize":
		r["protocolVersion"], r["capabilities"] = res["protocolVersion"], res["capabilities"]
	}
	return canonical(normalize(r))
}

func decodeFirstWins(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		m := map[string]any{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeFirstWins(dec)
			if err != nil {
				return nil, err
			}
			if _, seen := m[k.(string)]; !seen {
				m[k.(string)] = v
			}
		}
		_, err = dec.Token()
		return m, err
	case json.Delim('['):
		var a []any
		for dec.More() {
			v, err := decodeFirstWins(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err = dec.Token()
		return a, err
	}
	return tok, nil
}

// set sets r[k] unless v is empty (as JSON.stringify leaves out undefined).
func set(r map[string]any, k string, v any) {
	switch x := v.(type) {
	case nil:
		return
	case string:
		if x == "" {
			return
		}
	case []any:
		if len(x) == 0 {
			return
		}
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return
	}
	r[k] = v
}

// normalize makes a reading plain JSON values (numbers as float64, empty
// lists and maps left out as the other readers leave them out).
func normalize(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unencodable: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Sprintf("undecodable: %v", err)
	}
	return prune(out)
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			e = prune(e)
			if a, ok := e.([]any); ok && len(a) == 0 && k == "texts" {
				delete(x, k)
				continue
			}
			if e == false && (k == "isError" || k == "readOnly") {
				delete(x, k)
				continue
			}
			x[k] = e
		}
	case []any:
		for i := range x {
			x[i] = prune(x[i])
		}
	}
	return v
}

func canonical(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(io.Writer(&b))
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // maps are written with sorted keys
	return strings.TrimSpace(b.String())
}
