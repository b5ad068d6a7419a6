package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// import suggests "spare": 1 for servers started by npx, uvx, node or
// python, and for no other.
func TestImportSuggestsSpare(t *testing.T) {
	reg := filepath.Join(t.TempDir(), "external-mcp.json")
	code, stdout, stderr := runHere(t, []string{"HOME=/home/me"}, "--external-config", reg, "import", sampleFile(t, "claude_desktop_config.json"))
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, `hint: server "filesystem": npx starts slowly: "spare": 1`) {
		t.Errorf("no spare hint for the npx server:\n%s", stdout)
	}
	if n := strings.Count(stdout, `"spare": 1 in its entry`); n != 2 {
		t.Errorf("%d spare hints, want 2 (the npx servers; not docker):\n%s", n, stdout)
	}
	if strings.Contains(stdout, `server "github": docker`) {
		t.Errorf("a hint for docker:\n%s", stdout)
	}
	// The pass_env hint, without add's flag: import has no --pass-env.
	if !strings.Contains(stdout, `hint: server "filesystem": npx needs the proxy`) || strings.Contains(stdout, "--pass-env") {
		t.Errorf("import's pass_env hint:\n%s", stdout)
	}
}

// serve keeps a spare: the servers tool and the metrics show it, a call
// takes it, and colibri's exit leaves none behind. A one-shot command
// starts none.
func TestServeKeepsSpares(t *testing.T) {
	pids := t.TempDir()
	reg := writeRaw(t, map[string]any{"servers": map[string]any{
		"witness": fakeEntry("spare-witness", map[string]any{"FAKEMCP_PIDS": pids}, map[string]any{"spare": 1}),
	}})

	code, stdout, stderr := runHere(t, nil, "--external-config", reg, "servers", "--json")
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(stdout), ""), `"spare":{"ready":0}`) {
		t.Fatalf("servers --json: exit %d, %s %s", code, stdout, stderr)
	}
	code, stdout, _ = runHere(t, nil, "--external-config", reg, "check")
	if code != 0 || !strings.Contains(stdout, "witness              ok (1 spare kept ready by serve)") {
		t.Errorf("check: exit %d:\n%s", code, stdout)
	}
	if got := dirEntries(t, pids); len(got) != 0 {
		t.Fatalf("a one-shot command started spares %v", got)
	}

	c := startControlled(t, reg)
	cs, err := connectHTTP(t, c.url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ready := func() int {
		res := call(t, cs, "colibri_external_mcp_servers", map[string]any{})
		var out struct {
			Servers []struct {
				Spare *struct{ Ready int } `json:"spare"`
			} `json:"servers"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
		if len(out.Servers) != 1 || out.Servers[0].Spare == nil {
			t.Fatalf("servers shows no spare: %s", b)
		}
		return out.Servers[0].Spare.Ready
	}
	testwait.Eventually(t, "a spare ready", func() bool { return ready() == 1 })
	// Ready means started; the fake records its pid a moment later.
	testwait.Eventually(t, "the spare's pid", func() bool { return len(dirEntries(t, pids)) > 0 })
	spare := dirEntries(t, pids)
	if len(spare) != 1 {
		t.Fatalf("processes %v started, want the one spare", spare)
	}
	if _, metrics := c.scrape(t, ""); !strings.Contains(metrics, `colibri_spare_processes{server="witness"} 1`) {
		t.Errorf("metrics lack the ready spare:\n%s", grepLines(metrics, "spare"))
	}
	// The call runs on the spare (the gate is on: --external-call).
	res := call(t, cs, "colibri_external_mcp_call_tool", map[string]any{"server": "witness", "name": "pid"})
	if got := res.Content[0].(*mcp.TextContent).Text; got != spare[0] {
		t.Errorf("the call ran on pid %s, want the spare %s", got, spare[0])
	}
	testwait.Eventually(t, "the replacement spare", func() bool { return ready() == 1 })
	_, metrics := c.scrape(t, "")
	for _, want := range []string{`colibri_spare_hits_total{server="witness"} 1`, `colibri_spare_misses_total{server="witness"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "spare"))
		}
	}
	cs.Close()
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.cmd.Wait()
	for _, p := range dirEntries(t, pids) {
		pid, _ := strconv.Atoi(p)
		if proctable.Alive(pid) {
			t.Errorf("process %d outlived colibri", pid)
		}
	}
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
