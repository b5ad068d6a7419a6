package registry_test

import (
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// "source" records where add --from-registry took an entry from: the three
// strings, each required, nothing else.
func TestSourceKey(t *testing.T) {
	reg, err := registry.Parse(strings.NewReader(`{"servers":{"brave":{"command":"npx","args":["-y","@brave/brave-search-mcp-server@2.0.72"],
		"source":{"registry":"https://registry.modelcontextprotocol.io","name":"io.github.brave/brave-search-mcp-server","version":"2.0.72"}}}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	src := reg.Servers["brave"].Source
	if src == nil || src.String() != "io.github.brave/brave-search-mcp-server@2.0.72 from https://registry.modelcontextprotocol.io" {
		t.Fatalf("source = %+v", src)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"no version", `{"registry":"https://r.example","name":"a.b/c"}`, "/servers/x/source: missing property 'version'"},
		{"a number", `{"registry":"https://r.example","name":"a.b/c","version":1}`, "/servers/x/source/version: got number, want string"},
		{"unknown key", `{"registry":"https://r.example","name":"a.b/c","version":"1.0.0","versoin":"1"}`, "versoin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse(strings.NewReader(`{"servers":{"x":{"command":"x","source":`+tc.src+`}}}`), "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
