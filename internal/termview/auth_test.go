package termview

import (
	"strings"
	"testing"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/oauth"
)

// auth login, status and logout as a person reads them: the token's state,
// never a token; not logged in says what to run.
func TestAuthLines(t *testing.T) {
	exp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var b strings.Builder
	st := &oauth.Status{Server: "gh", TokenFile: "/s/gh.json", LoggedIn: true, ExpiresAt: &exp, Expired: true,
		Refreshable: true, Scopes: []string{"repo", "read:org"}, ClientID: "c1", Dynamic: true}
	LoggedIn(&b, st)
	AuthStatus(&b, st)
	AuthStatus(&b, &oauth.Status{Server: "gh", TokenFile: "/s/gh.json", Problem: "no token file"})
	LoggedOut(&b, "gh", "/s/gh.json", true)
	LoggedOut(&b, "gh", "/s/gh.json", false)
	when := exp.Local().Format(time.RFC3339)
	details := "  access token: expired " + when + " (refreshed at the next use)\n" +
		"  refresh token: saved\n  scopes: repo read:org\n  client: c1 (registered dynamically)\n"
	want := "gh: logged in; tokens saved in /s/gh.json\n" + details +
		"gh: logged in\n  token file: /s/gh.json\n" + details +
		"gh: not logged in (no token file)\n  token file: /s/gh.json\n  run: colibri-mcp auth login gh\n" +
		"gh: logged out (removed /s/gh.json)\n" +
		"gh: was not logged in (no /s/gh.json)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	authDetails(&b, &oauth.Status{ClientID: "c2"})
	if want := "  refresh token: none (a new login is needed when the access token expires)\n  client: c2 (pre-registered)\n"; b.String() != want {
		t.Errorf("no expiry, no refresh token: %q, want %q", b.String(), want)
	}
}
