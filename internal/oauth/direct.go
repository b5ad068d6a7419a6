package oauth

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
)

// needsPerson are the errors (OpenID Connect Core section 3.1.2.6) with
// which an authorization server says that a person must sign in or
// consent: the browser is then the way, not a failure.
var needsPerson = []string{"login_required", "consent_required", "interaction_required", "account_selection_required"}

// approveDirect asks the authorization endpoint once, as a browser's first
// request would, before a person is asked to: an authorization server that
// approves without a user (a test or conformance server, one that trusts
// the machine or the network) answers at once with a redirect to the
// loopback callback, and the login then needs no browser. Nothing is
// followed: a login page, a redirect anywhere else (a sign-in page), an
// authorization server that cannot be reached, or an error that asks for
// a person (login_required…) returns ok false, and the browser does the
// rest as before. The request carries what the authorization URL carries
// (client_id, PKCE challenge, state, resource), never a secret.
//
// A redirect to the callback is taken as the listener takes one (the
// state of the authorization URL, else it is not ours); an error it
// carries, other than one that asks for a person, ends the login with it.
func approveDirect(ctx context.Context, hc *http.Client, authURL, redirect string, want *wantState) (res callback, ok bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return callback{}, false
	}
	req.Header.Set("Accept", "text/html")
	resp, err := noRedirects(hc).Do(req)
	if err != nil {
		return callback{}, false
	}
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode < 300 || resp.StatusCode > 399 {
		return callback{}, false
	}
	loc, err := resp.Location()
	if err != nil || !sameEndpoint(loc, redirect) {
		return callback{}, false
	}
	q := loc.Query()
	if !want.matches(q.Get("state")) {
		// Not an answer to this login: the browser's will be.
		return callback{}, false
	}
	if slices.Contains(needsPerson, q.Get("error")) {
		return callback{}, false
	}
	return redirectResult(q), true
}

// sameEndpoint: u is the redirect URL itself (its query aside).
func sameEndpoint(u *url.URL, redirect string) bool {
	r, err := url.Parse(redirect)
	return err == nil && u.Scheme == r.Scheme && u.Host == r.Host && u.Path == r.Path && u.Fragment == ""
}

// redirectResult is what a redirect to the callback brings: the code, or
// the authorization server's refusal.
func redirectResult(q url.Values) callback {
	res := callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
	if e := q.Get("error"); e != "" {
		res.err = fmt.Errorf("the authorization server refused: %s", clip(e+" "+q.Get("error_description")))
	} else if res.code == "" {
		res.err = fmt.Errorf("the redirect carried no authorization code")
	}
	return res
}
