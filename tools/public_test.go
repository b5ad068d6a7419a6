package tools_test

import (
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
