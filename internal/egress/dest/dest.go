// Package dest reads the destinations of a sandbox's "net" list (a host
// name, *.domain, an IP address or CIDR block, with an optional port) and
// says what they match, and which addresses are special (loopback,
// private…), for the registry's checks and the egress proxy
// (internal/egress; docs/security.md, "Egress by destination").
//
//	d, err := dest.Parse("*.githubusercontent.com")
//	d.MatchesName("raw.githubusercontent.com", 443) // true
package dest

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Destination is one entry of a sandbox's "net" list: a host name (exact,
// or "*.example.com" for the names below example.com), or an IP address or
// CIDR block, with a port (0: 443 and 80).
type Destination struct {
	// Host is the normalized name (lower case, no trailing dot, IDNA's
	// ASCII form); with Wildcard, the suffix below which names match.
	Host     string
	Wildcard bool
	// Prefix is the address or block of an IP destination (Host "").
	Prefix netip.Prefix
	Port   int
}

// String is the destination as a registry writes it.
func (d Destination) String() string {
	var s string
	switch {
	case d.Host != "" && d.Wildcard:
		s = "*." + d.Host
	case d.Host != "":
		s = d.Host
	case d.Prefix.IsSingleIP():
		s = d.Prefix.Addr().String()
		if d.Prefix.Addr().Is6() && d.Port != 0 {
			s = "[" + s + "]"
		}
	default:
		s = d.Prefix.String()
	}
	if d.Port != 0 {
		s += ":" + strconv.Itoa(d.Port)
	}
	return s
}

// Parse reads one destination: "api.github.com",
// "*.githubusercontent.com", "registry.npmjs.org:443", "10.1.2.0/24:8080",
// "192.0.2.7", "[::1]:8080", "2001:db8::/32".
func Parse(s string) (Destination, error) {
	var d Destination
	if s == "" || len(s) > 300 {
		return d, errors.New("a destination is a host name, *.domain, or an IP address or CIDR block, with an optional :port")
	}
	if strings.Contains(s, "://") || strings.Contains(s, "/") && !strings.Contains(s, ".") && !strings.Contains(s, ":") {
		return d, fmt.Errorf("%q: a destination is a host name, *.domain, or an IP address or CIDR block with an optional :port, not a URL", s)
	}
	rest, port := s, ""
	switch {
	case strings.HasPrefix(s, "["): // [v6] or [v6]:port
		end := strings.Index(s, "]")
		if end < 0 {
			return d, fmt.Errorf("%q: an IPv6 address in brackets lacks its ]", s)
		}
		rest = s[1:end]
		if tail := s[end+1:]; tail != "" {
			p, ok := strings.CutPrefix(tail, ":")
			if !ok {
				return d, fmt.Errorf("%q: only :port may follow the brackets", s)
			}
			port = p
		}
	case strings.Count(s, ":") == 1: // host:port, v4:port, v4/n:port
		rest, port, _ = strings.Cut(s, ":")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return d, fmt.Errorf("%q: the port must be a number from 1 to 65535", s)
		}
		d.Port = n
	}
	if p, err := netip.ParsePrefix(rest); err == nil {
		if p != p.Masked() {
			return d, fmt.Errorf("%q: the block has bits set past its length (did you mean %s?)", s, p.Masked())
		}
		d.Prefix = p
		return d, nil
	}
	if a, err := netip.ParseAddr(rest); err == nil {
		if a.Zone() != "" {
			return d, fmt.Errorf("%q: an address with a zone cannot be a destination", s)
		}
		d.Prefix = netip.PrefixFrom(a, a.BitLen())
		return d, nil
	}
	name := rest
	if w, ok := strings.CutPrefix(name, "*."); ok {
		d.Wildcard, name = true, w
	}
	h, err := NormalizeName(name)
	if err != nil {
		return d, fmt.Errorf("%q: not a host name, *.domain, or IP address or block: %v", s, err)
	}
	if !strings.Contains(h, ".") && d.Wildcard {
		return d, fmt.Errorf("%q: a wildcard needs a domain of two labels or more (*.example.com)", s)
	}
	d.Host = h
	return d, nil
}

// NormalizeName is a host name as destinations are matched: lower case,
// no trailing dot, IDNA's ASCII form; an error for what is not a name.
func NormalizeName(name string) (string, error) {
	name = strings.TrimSuffix(name, ".")
	if name == "" || strings.ContainsAny(name, "*/[]:@ ") {
		return "", errors.New("not a host name")
	}
	a, err := idna.Lookup.ToASCII(name)
	if err != nil {
		return "", err
	}
	return strings.ToLower(a), nil
}

// MatchesName reports whether host (normalized) and port are this
// destination's.
func (d Destination) MatchesName(host string, port int) bool {
	if d.Host == "" || !d.portOK(port) {
		return false
	}
	if d.Wildcard {
		return strings.HasSuffix(host, "."+d.Host)
	}
	return host == d.Host
}

// MatchesAddr reports whether addr and port are within this IP destination.
func (d Destination) MatchesAddr(addr netip.Addr, port int) bool {
	return d.Host == "" && d.portOK(port) && d.Prefix.Contains(addr.Unmap())
}

func (d Destination) portOK(port int) bool {
	if d.Port == 0 {
		return port == 443 || port == 80
	}
	return port == d.Port
}

// special are the ranges a name may not resolve into unless the address is
// listed as a literal: loopback, link-local, private, carrier-grade NAT,
// benchmark, documentation, multicast, reserved and unspecified.
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
		"203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8", "2001:db8::/32", "100::/64",
		// IPv6 benchmarking, the newer documentation block (RFC 9637),
		// and ORCHID (v1 and v2): none is reached on the Internet.
		"2001:2::/48", "3fff::/20", "2001:10::/28", "2001:20::/28",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var (
	nat64   = netip.MustParsePrefix("64:ff9b::/96")
	nat64l  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixTo4  = netip.MustParsePrefix("2002::/16")
	teredo  = netip.MustParsePrefix("2001::/32")
	compat4 = netip.MustParsePrefix("::/96")
)

// IsSpecial reports whether addr lies in a special range, itself or as the
// IPv4 address an IPv6 one embeds (IPv4-mapped, IPv4-compatible, NAT64,
// 6to4).
func IsSpecial(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range special {
		if p.Contains(addr) {
			return true
		}
	}
	if !addr.Is6() {
		return false
	}
	b := addr.As16()
	switch {
	case nat64.Contains(addr), compat4.Contains(addr):
		return IsSpecial(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case sixTo4.Contains(addr):
		return IsSpecial(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	case nat64l.Contains(addr), teredo.Contains(addr):
		return true // local-use NAT64 and Teredo embed addresses colibri cannot vouch for
	}
	return false
}
