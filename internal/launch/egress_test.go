package launch

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A reload that narrows a server's "net" list, or removes the server,
// revokes the credential its processes had: one the server kept from
// before (in its files, or in a process still running) no longer passes
// the proxy; an entry unchanged keeps its own.
func TestRetainRevokesChangedGrants(t *testing.T) {
	b := New(Config{Environ: func() []string { return nil }, NoUserNamespaces: true})
	defer b.Close()
	server := func(name string, dests ...string) *registry.Server {
		return &registry.Server{Name: name, Sandbox: &registry.Sandbox{Destinations: dests}}
	}
	gh, keep, gone := server("gh", "api.github.com", "evil.example"), server("keep", "example.org"), server("gone", "example.net")
	var urls []string
	for _, s := range []*registry.Server{gh, keep, gone} {
		g, err := b.egressGrant(s)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, g.URL)
	}
	b.Retain(&registry.Registry{Servers: map[string]*registry.Server{"gh": server("gh", "api.github.com"), "keep": keep}})
	// 407: the credential is unknown; anything else (403, 502) passed it.
	for i, want := range []bool{false, true, false} {
		if got := passes(t, urls[i]); got != want {
			t.Errorf("%s after the reload: credential passes %v, want %v", []string{"gh, narrowed", "keep", "gone"}[i], got, want)
		}
	}
}

// passes reports whether proxyURL's credential passes its proxy (any
// answer but 407 to a CONNECT to an unlisted destination).
func passes(t *testing.T, proxyURL string) bool {
	t.Helper()
	u, _ := url.Parse(proxyURL)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pw, _ := u.User.Password()
	fmt.Fprintf(c, "CONNECT 192.0.2.1:443 HTTP/1.1\r\nHost: 192.0.2.1:443\r\nProxy-Authorization: Basic %s\r\n\r\n",
		basicAuth("colibri", pw))
	b := make([]byte, 64)
	n, _ := c.Read(b)
	return !strings.Contains(string(b[:n]), " 407 ")
}

func basicAuth(user, pw string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
}
