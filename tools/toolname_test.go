package tools

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCheck(t *testing.T) {
	for name, valid := range map[string]bool{
		"echo": true, "get_user-2": true, "admin/delete.user": true, strings.Repeat("x", 128): true,
		"": false, strings.Repeat("x", 129): false, "dеlete_user": false, // Cyrillic е
		"a b": false, "héllo": false, "a\x00b": false, "tool:x": false,
	} {
		if got := checkToolName(name) == ""; got != valid {
			t.Errorf("checkToolName(%.20q) valid = %v, want %v (%s)", name, got, valid, checkToolName(name))
		}
	}
}

func TestSplitBounded(t *testing.T) {
	var tools []*mcp.Tool
	for range 1000 {
		tools = append(tools, &mcp.Tool{Name: strings.Repeat("é", 10000)})
	}
	tools = append(tools, &mcp.Tool{Name: "ok"})
	valid, invalid := splitToolNames(tools)
	if len(valid) != 1 || len(invalid) != MaxListed+1 {
		t.Fatalf("%d valid, %d invalid", len(valid), len(invalid))
	}
	for _, i := range invalid {
		if len(i.Name) > 4*MaxShown {
			t.Errorf("a name of %d bytes shown", len(i.Name))
		}
	}
}
