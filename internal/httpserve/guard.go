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
// not name the served address or one of the allowed names (--allowed-host:
// a load balancer's or proxy's public name, with any port; host names
// compare case-insensitively): a page on another site that resolves its own
// name to this address (DNS rebinding) is turned away with 403, and so is a
// request a browser says came from another site's page (Sec-Fetch-Site). On
// an address that listens everywhere, a request that arrived through a
// loopback interface must still name a loopback host (or an allowed name:
// the proxy in front), as go-sdk's own protection has it. With probe (the
// health, readiness and metrics endpoints), a request with no Host, or
// whose Host is an IP literal, is also served: a health check or a scraper
// that dials an address, which no rebinding page can send (its Host is the
// page's own name).
func sameHost(listenHost, port string, allowed []string, probe bool) func(http.Handler) http.Handler {
	anyHost := listenHost == "" || net.ParseIP(listenHost) != nil && net.ParseIP(listenHost).IsUnspecified()
	ok := func(hostport string, viaLoopback bool) bool {
		h, p, err := net.SplitHostPort(hostport)
		if err != nil {
			h, p = hostport, "80"
		}
		h = strings.Trim(h, "[]")
		for _, name := range allowed {
			if strings.EqualFold(h, name) {
				return true
			}
		}
		if p != port {
			return false
		}
		switch {
		case anyHost:
			return !viaLoopback || isLoopback(h)
		case isLoopback(listenHost):
			return isLoopback(h)
		}
		return strings.EqualFold(h, listenHost)
	}
	probeHost := func(hostport string) bool {
		if !probe {
			return false
		}
		if hostport == "" {
			return true
		}
		h, _, err := net.SplitHostPort(hostport)
		if err != nil {
			h = hostport
		}
		return net.ParseIP(strings.Trim(h, "[]")) != nil
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			viaLoopback := false
			if a, found := r.Context().Value(http.LocalAddrContextKey).(net.Addr); found && a != nil {
				h, _, _ := net.SplitHostPort(a.String())
				viaLoopback = isLoopback(h)
			}
			if !ok(r.Host, viaLoopback) && !probeHost(r.Host) {
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

// CheckAllowedHost checks a name given to --allowed-host: a host name or
// an IP address, without a scheme, port or path.
func CheckAllowedHost(name string) error {
	if name == "" || strings.ContainsAny(name, "/:@ \t[]") && net.ParseIP(name) == nil {
		return fmt.Errorf("--allowed-host / COLIBRI_MCP_ALLOWED_HOSTS: %q: want a host name such as mcp.example.com, without a scheme, port or path", name)
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
