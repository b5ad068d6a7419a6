package launch

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/egress"
	"github.com/colibri-mcp/colibri-mcp/internal/egress/dest"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// proxyVars are the variables that point a sandboxed server with a "net"
// list at its egress proxy: the usual runtimes read one or another
// (docs/security.md lists which), and Node 22.21+ and 24 honour them with
// NODE_USE_ENV_PROXY=1. NO_PROXY is emptied: loopback goes through the
// proxy too.
var proxyVars = []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"}

// proxyEnv is env with the proxy variables of a grant's URL in place of
// any it had.
func proxyEnv(env []string, proxyURL string) []string {
	names := append(slices.Clone(proxyVars), "NO_PROXY", "no_proxy", "NODE_USE_ENV_PROXY")
	env = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
	for _, n := range proxyVars {
		env = append(env, n+"="+proxyURL)
	}
	return append(env, "NO_PROXY=", "no_proxy=", "NODE_USE_ENV_PROXY=1")
}

// egressGrant is srv's grant at the egress proxy, started on first use;
// one per server and list of destinations, kept while colibri runs, so
// that per-request, warm and spare processes share one credential and one
// max_connections.
func (b *Builder) egressGrant(srv *registry.Server) (*egress.Grant, error) {
	key := grantKey(srv)
	b.egressMu.Lock()
	defer b.egressMu.Unlock()
	if g := b.grants[key]; g != nil {
		return g, nil
	}
	if b.proxy == nil {
		var upstream *url.URL
		for _, name := range []string{"HTTPS_PROXY", "https_proxy"} {
			if v, ok := b.Getenv(name); ok && v != "" {
				if u, err := url.Parse(v); err == nil && u.Host != "" {
					upstream = u
					break
				}
			}
		}
		p, err := egress.New(egress.Options{Logger: b.cfg.Logger, Upstream: upstream,
			Refused: b.cfg.EgressRefused, Connected: b.cfg.EgressConnected})
		if err != nil {
			return nil, err
		}
		b.proxy = p
		b.grants = map[string]*egress.Grant{}
		b.proxySock = ""
		if b.netnsAvailable() {
			sock := filepath.Join(b.stateDir(), "egress-"+strconv.Itoa(os.Getpid())+".sock")
			if err := os.MkdirAll(filepath.Dir(sock), 0o700); err == nil && len(sock) < 100 && p.ListenUnix(sock) == nil {
				b.proxySock = sock
			}
		}
	}
	sb := srv.Confinement()
	var dests []dest.Destination
	for _, s := range sb.Destinations {
		d, err := dest.Parse(s) // checked by the registry already
		if err != nil {
			return nil, err
		}
		dests = append(dests, d)
	}
	g := b.proxy.Grant(srv.Name, dests, sb.Connections())
	b.grants[key] = g
	return g, nil
}

// grantKey is srv's grant's key: its name, destinations and
// max_connections; "" for an entry without a "net" list.
func grantKey(srv *registry.Server) string {
	sb := srv.Confinement()
	if sb == nil || sb.Destinations == nil {
		return ""
	}
	return srv.Name + "\x00" + strings.Join(sb.Destinations, "\x00") + "\x00" + strconv.Itoa(sb.Connections())
}

// Retain revokes the egress grants of servers that reg no longer has, or
// whose destinations or max_connections changed: a credential a server
// kept from before the change (in its files, or in a process still
// running) no longer reaches what its entry no longer lists. Its next
// processes get a new grant.
func (b *Builder) Retain(reg *registry.Registry) {
	b.egressMu.Lock()
	defer b.egressMu.Unlock()
	for key, g := range b.grants {
		if srv, ok := reg.Servers[g.Server]; !ok || grantKey(srv) != key {
			g.Revoke()
			delete(b.grants, key)
		}
	}
}

// Close stops the egress proxy, if one was started.
func (b *Builder) Close() {
	b.egressMu.Lock()
	defer b.egressMu.Unlock()
	if b.proxy != nil {
		b.proxy.Close()
		if b.proxySock != "" {
			os.Remove(b.proxySock)
		}
		b.proxy, b.grants, b.proxySock = nil, nil, ""
	}
}
