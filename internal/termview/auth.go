package termview

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/oauth"
)

// LoggedIn is what auth login prints once the tokens are saved.
func LoggedIn(w io.Writer, st *oauth.Status) {
	fmt.Fprintf(w, "%s: logged in; tokens saved in %s\n", st.Server, st.TokenFile)
	authDetails(w, st)
}

// AuthStatus is auth status: logged in, with the token's expiry, scopes
// and client (never a token), or not, with why and what to run.
func AuthStatus(w io.Writer, st *oauth.Status) {
	if !st.LoggedIn {
		fmt.Fprintf(w, "%s: not logged in (%s)\n  token file: %s\n  run: colibri-mcp auth login %s\n", st.Server, st.Problem, st.TokenFile, st.Server)
		return
	}
	fmt.Fprintf(w, "%s: logged in\n  token file: %s\n", st.Server, st.TokenFile)
	authDetails(w, st)
}

// LoggedOut is what auth logout prints: the token file removed, or none
// there.
func LoggedOut(w io.Writer, server, path string, removed bool) {
	if removed {
		fmt.Fprintf(w, "%s: logged out (removed %s)\n", server, path)
	} else {
		fmt.Fprintf(w, "%s: was not logged in (no %s)\n", server, path)
	}
}

func authDetails(w io.Writer, st *oauth.Status) {
	if st.ExpiresAt != nil {
		state := "expires"
		if st.Expired {
			state = "expired"
		}
		fmt.Fprintf(w, "  access token: %s %s", state, st.ExpiresAt.Local().Format(time.RFC3339))
		if st.Expired && st.Refreshable {
			fmt.Fprint(w, " (refreshed at the next use)")
		}
		fmt.Fprintln(w)
	}
	refresh := "none (a new login is needed when the access token expires)"
	if st.Refreshable {
		refresh = "saved"
	}
	fmt.Fprintf(w, "  refresh token: %s\n", refresh)
	if len(st.Scopes) > 0 {
		fmt.Fprintf(w, "  scopes: %s\n", strings.Join(st.Scopes, " "))
	}
	client := "pre-registered"
	if st.Dynamic {
		client = "registered dynamically"
	}
	fmt.Fprintf(w, "  client: %s (%s)\n", st.ClientID, client)
}
