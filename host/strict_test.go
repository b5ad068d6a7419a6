package host_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
)

// A hosted server's message of the hostile corpus (testdata/strict/) that
// two readers could read differently fails the request as kind protocol
// (handshake, "protocol: …", during initialize), naming the JSON location,
// and is not retried; every other is read. Nothing of a refused message
// reaches the caller: the request fails instead.
func TestCorpusFromTheServer(t *testing.T) {
	b, err := os.ReadFile("../testdata/strict/corpus.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, host.Options{})
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var it struct {
			Name, From, Answers, Message string
			Refuse                       bool
		}
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			t.Fatal(err)
		}
		if it.From != "server" {
			continue
		}
		t.Run(it.Name, func(t *testing.T) {
			srv := fake("strict")
			srv.Env["FAKEMCP_STRICT_AT"] = it.Answers
			srv.Env["FAKEMCP_STRICT_LINE"] = strings.ReplaceAll(strings.ReplaceAll(it.Message, "<FF>", "\xff"), `"id":1,`, `"id":%ID%,`)
			var err error
			phase := failure.PhaseCall
			switch it.Answers {
			case "tools/list", "initialize":
				phase = failure.PhaseList
				_, err = h.ListTools(t.Context(), srv, nil)
			default:
				_, err = h.CallTool(t.Context(), srv, "any", nil, nil, nil)
			}
			switch {
			case !it.Refuse && err != nil:
				t.Fatalf("refused: %v", err)
			case !it.Refuse:
			case it.Answers == "initialize":
				e := wantKind(t, err, failure.KindHandshake, failure.PhaseInitialize)
				if !strings.Contains(e.Error(), "protocol: ") || !strings.Contains(e.Error(), "at /result/") {
					t.Errorf("message %q, want the cause protocol: and the location", e.Error())
				}
			default:
				e := wantKind(t, err, failure.KindProtocol, phase)
				if !strings.Contains(e.Error(), "at /") || e.Attempts > 1 {
					t.Errorf("message %q (attempts %d), want the location, one attempt", e.Error(), e.Attempts)
				}
			}
		})
	}
}

// Invalid UTF-8 in a hosted result's text (a file name read from disk) is
// replaced with U+FFFD, not refused.
func TestHostedTextIsRepaired(t *testing.T) {
	h := newHarness(t, host.Options{})
	srv := fake("strict")
	srv.Env["FAKEMCP_STRICT_AT"] = "tools/call"
	srv.Env["FAKEMCP_STRICT_LINE"] = "{\"jsonrpc\":\"2.0\",\"id\":%ID%,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9 \\ud800.txt\"}]}}"
	res, err := h.CallTool(t.Context(), srv, "any", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "caf\uFFFD \uFFFD.txt" {
		t.Errorf("text = %q, want the invalid parts as U+FFFD", got)
	}
}
