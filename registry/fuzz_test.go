package registry_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// FuzzParse: any input is either a registry whose every server has a name
// and a command, no control character in what reaches a process, and
// durations within 24 hours; or a *registry.Error; never a panic, never
// another error.
func FuzzParse(f *testing.F) {
	f.Add(`{"servers":{"demo":{"command":"/bin/demo","args":["--stdio"],"env":{"A":"${B}$$"}}}}`)
	f.Add(`{"servers":{"j":{"command":"/x","jail":{"name":"mcp0","user":"mcp","root_path":"/r"}}}}`)
	f.Add(`{"servers":{"e":{"command":"x","jail":{"path":"/j","ip4":"10.0.0.5"},"lifecycle":"persistent","idle_timeout_ms":5}}}`)
	f.Add(`{"servers":{"-x":{"command":1}}}`)
	f.Add(`{"servers":`)
	f.Add(`[]`)
	f.Add(`{"servers":{"d":{"command":"/a","command":"/b"}}}`)
	f.Add(`{"servers":{"d":{"command":"/a","args":["\u0000"],"env":{"A":"\u001b"}}}}`)
	f.Add(`{"servers":{"d":{"command":"/a","cwd":"/srv","timeout_ms":86400000,"jail":{"name":"mcp0"}}}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		reg, err := registry.Parse(strings.NewReader(doc), "/etc/colibri/external-mcp.json")
		if err != nil {
			var re *registry.Error
			if !errors.As(err, &re) || len(re.Problems) == 0 {
				t.Fatalf("err = %#v, want a *registry.Error with problems", err)
			}
			return
		}
		for name, s := range reg.Servers {
			if s.Name != name || s.Command == "" {
				t.Fatalf("server %q: %+v", name, s)
			}
			values := append([]string{s.Command, s.Cwd}, s.Args...)
			for k, v := range s.Env {
				values = append(values, k, v)
			}
			for _, v := range values {
				if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
					t.Fatalf("server %q: accepted a control character in %q", name, v)
				}
			}
			if s.Timeout(0) > 24*time.Hour || s.CallTimeoutOr(0) > 24*time.Hour || s.IdleTimeout() > 24*time.Hour {
				t.Fatalf("server %q: a timeout past 24 hours: %+v", name, s)
			}
		}
	})
}
