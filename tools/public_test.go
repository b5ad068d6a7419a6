package tools_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// Over HTTP (HideFolders) colibri's own errors name a file by its last
// element, never a folder of the machine it runs on: a command that does not
// exist, a cwd that is not a folder, in call_tool and in list_tools over
// every server. Over stdio the whole path stays (the user's own machine).
func TestErrorsOverHTTPNameNoFolder(t *testing.T) {
	const folder = "/srv/secret-layout/opt"
	reg := newLive(map[string]*registry.Server{
		"gone":   {Command: folder + "/bin/missing-server"},
		"badcwd": {Command: fakeBin, Args: []string{"ok"}, Cwd: folder + "/work"},
	})
	for _, hide := range []bool{true, false} {
		h := host.New(host.Options{Timeout: 10 * time.Second})
		t.Cleanup(h.Close)
		svc := tools.New(tools.Options{Registry: reg.load, ConfigPath: "external-mcp.json", Host: h, ExternalCall: true,
			RegistryPoll: -1, HideFolders: hide})
		t.Cleanup(svc.Close)
		cs := connect(t, svc)
		texts := []string{
			resultText(callTool(t, cs, tools.CallToolTool, map[string]any{"server": "gone", "name": "x"})),
			resultText(callTool(t, cs, tools.CallToolTool, map[string]any{"server": "badcwd", "name": "echo"})),
			structuredJSON(t, callTool(t, cs, tools.ListToolsTool, map[string]any{})),
		}
		for _, text := range texts {
			if !strings.Contains(text, "missing-server") && !strings.Contains(text, "work") {
				t.Errorf("hide %v: the error does not name the file: %s", hide, text)
			}
			if got := strings.Contains(text, folder); got == hide {
				t.Errorf("hide %v: names the folder %v: %s", hide, got, text)
			}
		}
	}
}

// An 8 MB server or tool name gives an answer of a few KiB: colibri's own
// errors quote a caller's strings clipped (they quoted them whole, up to
// five times: a 40 MB answer).
func TestHostileEchoesClipped(t *testing.T) {
	huge := strings.Repeat("s", 8<<20)
	reg := newLive(map[string]*registry.Server{"h": listedTools(t, []map[string]any{tool("get_user", object)})})
	cs := connect(t, newLiveService(t, reg, serviceOpts{gate: true, poll: -1}))
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{tools.CallToolTool, map[string]any{"server": huge, "name": "x"}},
		{tools.CallToolTool, map[string]any{"server": "h", "name": huge}},
		{tools.ListToolsTool, map[string]any{"server": huge}},
		{tools.ListToolsTool, map[string]any{"server": "h", "tool": huge}},
		{tools.ListToolsTool, map[string]any{"tool": huge}},
	} {
		res := callTool(t, cs, tc.tool, tc.args)
		b, _ := json.Marshal(res)
		if !res.IsError || len(b) > 64<<10 {
			t.Errorf("%s: isError %v, an answer of %d bytes", tc.tool, res.IsError, len(b))
		}
	}
}

// The text of an error a hosted server caused ends with the last lines of
// its stderr (what a model reads: it reached only structuredContent), for
// call_tool and list_tools alike, and in aggregate mode, where a tool with
// an outputSchema gets the text alone.
func TestHostileStderrTailInText(t *testing.T) {
	reg := newLive(map[string]*registry.Server{
		"early": {Command: fakeBin, Args: []string{"exit-early"}},
		"mid":   {Command: fakeBin, Args: []string{"exit-mid-call"}},
	})
	cs := connect(t, newLiveService(t, reg, serviceOpts{gate: true, poll: -1}))
	for _, tc := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{tools.CallToolTool, map[string]any{"server": "early", "name": "any"}, "fatal: missing API key"},
		{tools.ListToolsTool, map[string]any{"server": "early"}, "fatal: missing API key"},
		{tools.CallToolTool, map[string]any{"server": "mid", "name": "any"}, "segmentation fault"},
	} {
		res := callTool(t, cs, tc.tool, tc.args)
		text := resultText(res)
		if !res.IsError || !strings.HasPrefix(text, "colibri: ") || !strings.HasSuffix(text, tc.says) {
			t.Errorf("%s %v: text %q, want it to end with %q", tc.tool, tc.args, text, tc.says)
		}
	}
}

// Over HTTP (HideFolders) the servers tool names each command, argument
// and working directory by its last element: what runs, never where on
// this machine. Over stdio the whole path stays.
func TestServersOverHTTPNameNoFolder(t *testing.T) {
	const folder = "/srv/secret-layout/opt"
	reg := newLive(map[string]*registry.Server{
		"app": {Command: folder + "/bin/app-server", Args: []string{"--root", folder + "/data", "--port=3000"}, Cwd: folder + "/work"},
	})
	for _, hide := range []bool{true, false} {
		h := host.New(host.Options{Timeout: 10 * time.Second})
		t.Cleanup(h.Close)
		svc := tools.New(tools.Options{Registry: reg.load, ConfigPath: folder + "/external-mcp.json", Host: h, RegistryPoll: -1, HideFolders: hide})
		t.Cleanup(svc.Close)
		text := structuredJSON(t, callTool(t, connect(t, svc), tools.ServersTool, map[string]any{}))
		if !strings.Contains(text, "app-server") || !strings.Contains(text, "--port=3000") {
			t.Errorf("hide %v: the command is not named: %s", hide, text)
		}
		if got := strings.Contains(text, folder); got == hide {
			t.Errorf("hide %v: names the folder %v: %s", hide, got, text)
		}
	}
}
