package termview

import (
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// check's lines: a failure with its stderr tail under it, tools that
// differ from their pins (refused, or only warned about), spares, and the
// confinement line under each; the summary or the registry's problem.
func TestCheckLines(t *testing.T) {
	n := 3
	var b strings.Builder
	CheckRead(&b, "/r.json", 1)
	CheckLine(&b, tools.CheckServer{Server: "died", Confinement: "unconfined",
		Error: &tools.ErrorDetail{Kind: "handshake", Message: "exited", StderrTail: "no API key\n"}})
	CheckLine(&b, tools.CheckServer{Server: "pinned", Tools: &n, Confinement: "sandboxed",
		Changed: []pin.Change{{Name: "echo", What: []string{"description", "schema"}}}})
	CheckLine(&b, tools.CheckServer{Server: "warned", OK: true, Tools: &n, Confinement: "c",
		Changed: []pin.Change{{Name: "add", What: []string{"schema"}}}})
	CheckLine(&b, tools.CheckServer{Server: "spares", OK: true, Tools: &n, Spare: 2, Confinement: "c"})
	CheckLine(&b, tools.CheckServer{Server: "one", OK: true, Spare: 1, Confinement: "c"})
	CheckLine(&b, tools.CheckServer{Server: "plain", OK: true, Confinement: "c"})
	one := 1
	CheckLine(&b, tools.CheckServer{Server: "caps", OK: true, Tools: &one, ToolsWith: &one, Capabilities: "sampling", Confinement: "c"})
	CheckEnd(&b, &tools.CheckResult{Servers: []tools.CheckServer{{OK: true}, {Error: &tools.ErrorDetail{}}}}, "/r.json", 1500*time.Millisecond)
	CheckEnd(&b, &tools.CheckResult{Error: &tools.ErrorDetail{Message: "invalid"}}, "/r.json", 0)
	// The registry's message names the file: not twice.
	CheckEnd(&b, &tools.CheckResult{Error: &tools.ErrorDetail{Message: "/r.json: /servers/a/comand: unknown key"}}, "/r.json", 0)
	want := "registry /r.json: valid, 1 server\n" +
		"  died                 FAIL handshake: exited\n      | no API key\n  " + strings.Repeat(" ", 20) + " unconfined\n" +
		"  pinned               CHANGED (3 tools; differ from their pins: echo (description, schema); see colibri-mcp pins diff pinned)\n  " + strings.Repeat(" ", 20) + " sandboxed\n" +
		"  warned               ok, changed (3 tools; differ from their pins: add (schema); see colibri-mcp pins diff warned)\n  " + strings.Repeat(" ", 20) + " c\n" +
		"  spares               ok (3 tools; 2 spares kept ready by serve)\n  " + strings.Repeat(" ", 20) + " c\n" +
		"  one                  ok (1 spare kept ready by serve)\n  " + strings.Repeat(" ", 20) + " c\n" +
		"  plain                ok\n  " + strings.Repeat(" ", 20) + " c\n" +
		"  caps                 ok (1 tool)\n  " + strings.Repeat(" ", 20) + " 1 tool listed to a caller offering sampling, pinned for it\n  " + strings.Repeat(" ", 20) + " c\n" +
		"1 ok, 1 failed in 1.5s\n" +
		"registry /r.json: invalid\n" +
		"registry /r.json: /servers/a/comand: unknown key\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	Failure(&b, &tools.ErrorDetail{Kind: "spawn", Message: "no such file", StderrTail: "a\nb"})
	if want := "colibri-mcp: spawn: no such file\nlast lines of the server's stderr:\n  a\n  b\n"; b.String() != want {
		t.Errorf("failure: %q, want %q", b.String(), want)
	}
}
