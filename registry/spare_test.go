package registry_test

import (
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// "spare" is 0 to 4, on per_request command entries only; it allows
// idle_timeout_ms; each mistake is named at its JSON location.
func TestSpareKey(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"too many", `{"servers":{"demo":{"command":"x","spare":5}}}`, "/servers/demo/spare: maximum"},
		{"negative", `{"servers":{"demo":{"command":"x","spare":-1}}}`, "/servers/demo/spare: minimum"},
		{"not a number", `{"servers":{"demo":{"command":"x","spare":"1"}}}`, "/servers/demo/spare: got string, want integer"},
		{"persistent", `{"servers":{"demo":{"command":"x","lifecycle":"persistent","spare":1}}}`, `/servers/demo/spare: spare applies only to a "per_request" command entry`},
		{"remote", `{"servers":{"r":{"url":"https://example.com/mcp","lifecycle":"per_request","spare":1}}}`, `/servers/r/spare: spare applies only to a "per_request" command entry`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := registry.Parse(strings.NewReader(tc.doc), "/etc/colibri/external-mcp.json")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
	reg, err := registry.Parse(strings.NewReader(`{"servers":{"demo":{"command":"x","spare":4,"idle_timeout_ms":60000}}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	srv := reg.Servers["demo"]
	if srv.Spare != 4 || srv.IdleTimeout().Milliseconds() != 60000 {
		t.Errorf("spare %d, idle %s; want 4, 1m", srv.Spare, srv.IdleTimeout())
	}
	// How many are kept ready decides no process: not part of the key.
	other := *srv
	other.Spare = 1
	if other.ProcessKey() != srv.ProcessKey() {
		t.Error("ProcessKey changes with spare")
	}
}
