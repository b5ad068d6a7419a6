package dest

import (
	"net/netip"
	"testing"
)

func TestParseDestination(t *testing.T) {
	for in, want := range map[string]string{
		"api.github.com":          "api.github.com",
		"API.GitHub.com.":         "api.github.com",
		"*.githubusercontent.com": "*.githubusercontent.com",
		"registry.npmjs.org:443":  "registry.npmjs.org:443",
		"10.1.2.0/24:8080":        "10.1.2.0/24:8080",
		"192.0.2.7":               "192.0.2.7",
		"[::1]:8080":              "[::1]:8080",
		"2001:db8::/32":           "2001:db8::/32",
		"::1":                     "::1",
		"bücher.example":          "xn--bcher-kva.example",
	} {
		d, err := Parse(in)
		if err != nil || d.String() != want {
			t.Errorf("%q: %v, %v; want %s", in, d, err, want)
		}
	}
	for _, bad := range []string{"", "*", "*.com", "http://x.com", "x.com:0", "x.com:70000", "x.com:https",
		"10.1.2.3/24", "[::1", "[::1]x", "a b", "user@x.com", "fe80::1%eth0", "*.*.x.com"} {
		if d, err := Parse(bad); err == nil {
			t.Errorf("%q accepted as %v", bad, d)
		}
	}
}

func TestSpecialRanges(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1": true, "10.2.3.4": true, "172.20.0.1": true, "192.168.1.1": true, "169.254.169.254": true,
		"100.64.0.1": true, "198.18.0.1": true, "224.0.0.1": true, "0.0.0.0": true, "::1": true, "fe80::1": true,
		"fd00::1": true, "::ffff:127.0.0.1": true, "64:ff9b::a00:1": true, "2002:a00:1::": true, "::": true,
		"2001:2::1": true, "3fff::1": true, "2001:10::1": true, "2001:20::1": true,
		"140.82.112.3": false, "2606:4700::1111": false, "64:ff9b::8c52:7003": false, "2002:8c52:7003::": false,
	} {
		if got := IsSpecial(netip.MustParseAddr(s)); got != want {
			t.Errorf("%s: special %v, want %v", s, got, want)
		}
	}
}
