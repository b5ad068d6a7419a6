package httpserve

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// sameHost refuses requests whose Host, or Origin when there is one, does
// not name the served address (host names compare case-insensitively): a
// page on another site that resolves its own name to this address (DNS
// rebinding) is turned away with 403, and so is a request a browser says
// came from another site's page (Sec-Fetch-Site). On an address that listens
// everywhere, a request that arrived through a loopback interface must still
// name a loopback host, as go-sdk's own protection has it.
//
// allowed are the other names a request may give (--allowed-host: a load
// balancer's or a proxy's public name, docs/scaling.md): NAME for any port,
// NAME:PORT for that one.
func sameHost(listenHost, port string, allowed []string) func(http.Handler) http.Handler {
	anyHost := listenHost == "" || net.ParseIP(listenHost) != nil && net.ParseIP(listenHost).IsUnspecified()
	ok := func(hostport string, viaLoopback bool) bool {
		h, p, err := net.SplitHostPort(hostport)
		if err != nil {
			h, p = hostport, "80"
		}
		for _, a := range allowed {
			if strings.EqualFold(a, strings.Trim(h, "[]")) || strings.EqualFold(a, net.JoinHostPort(strings.Trim(h, "[]"), p)) {
				return true
			}
		}
		if p != port {
			return false
		}
		h = strings.Trim(h, "[]")
		switch {
		case anyHost:
			return !viaLoopback || isLoopback(h)
		case isLoopback(listenHost):
			return isLoopback(h)
		}
		return strings.EqualFold(h, listenHost)
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			viaLoopback := false
			if a, found := r.Context().Value(http.LocalAddrContextKey).(net.Addr); found && a != nil {
				h, _, _ := net.SplitHostPort(a.String())
				viaLoopback = isLoopback(h)
			}
			if !ok(r.Host, viaLoopback) {
				refuse(w, http.StatusForbidden, "forbidden: Host does not match the served address")
				return
			}
			if origin := r.Header.Get("Origin"); origin != "" {
				if !ok(originHostPort(origin), viaLoopback) {
					refuse(w, http.StatusForbidden, "forbidden: Origin does not match the served address")
					return
				}
			}
			// A browser sends no Origin with a "no-cors" GET (an <img> or
			// <script> on any site), but it does say where the request
			// comes from: colibri serves no page, so a request from a page
			// is from another origin. (A user typing the URL sends "none".)
			if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" && site != "same-origin" {
				refuse(w, http.StatusForbidden, "forbidden: a request from a web page (Sec-Fetch-Site: "+site+")")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// CheckAllowedHosts refuses an --allowed-host that is not a host name or
// address, with an optional port.
func CheckAllowedHosts(names []string) error {
	for _, n := range names {
		h, _, err := net.SplitHostPort(n)
		if err != nil {
			h = n
		}
		if h == "" || strings.ContainsAny(n, "/@ \t") || strings.Contains(n, "://") {
			return fmt.Errorf("--allowed-host / COLIBRI_MCP_ALLOWED_HOSTS %q: want a host name or address, with an optional :PORT (the balancer's public name)", n)
		}
	}
	return nil
}

// originHostPort is the host:port an Origin header names, with the scheme's
// default port when it has none; "" when it cannot be parsed.
func originHostPort(origin string) string {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
