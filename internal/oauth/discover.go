package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// endpoint is what discovery finds for a protected MCP server.
type endpoint struct {
	tokenURL  string
	authStyle oauth2.AuthStyle
	resource  string   // the protected resource's own name for itself
	scopes    []string // scopes_supported of its metadata
}

// discover finds the token endpoint of the MCP server at serverURL, as the
// MCP authorization spec (2025-11-25) says: the protected-resource metadata
// (RFC 9728) at metadataURL (from a 401's WWW-Authenticate) or at the
// well-known places, then its first authorization server's metadata
// (RFC 8414 or OpenID discovery). The spec's 2025-03-26 fallbacks apply
// when there is none: the server's origin is the authorization server, its
// token endpoint /token.
//
// pinned, when set (oauth.issuer), is the only authorization server that
// may be used: metadata naming another is refused with an *IssuerError
// before anything is asked of it.
func discover(ctx context.Context, hc *http.Client, serverURL, metadataURL, pinned string) (*endpoint, error) {
	var prm *oauthex.ProtectedResourceMetadata
	for _, c := range prmCandidates(metadataURL, serverURL) {
		p, err := oauthex.GetProtectedResourceMetadata(ctx, c[0], c[1], hc)
		if err == nil && p != nil {
			prm = p
			break
		}
	}
	ep := &endpoint{resource: serverURL}
	var issuer string
	if prm != nil {
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("the protected-resource metadata of %s names no authorization server", serverURL)
		}
		issuer = prm.AuthorizationServers[0]
		if pinned != "" {
			// The pinned one, wherever the metadata lists it.
			for _, as := range prm.AuthorizationServers {
				if issuersEqual(as, pinned) {
					issuer = as
				}
			}
		}
		ep.resource = prm.Resource
		ep.scopes = prm.ScopesSupported
	} else {
		u, err := url.Parse(serverURL)
		if err != nil {
			return nil, fmt.Errorf("server url: %w", err)
		}
		u.Path, u.RawQuery, u.Fragment = "", "", ""
		issuer = u.String()
	}
	if pinned != "" && !issuersEqual(issuer, pinned) {
		return nil, &IssuerError{Pinned: pinned, Named: issuer}
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, hc)
	if err != nil {
		return nil, fmt.Errorf("reading the metadata of authorization server %s: %w", issuer, err)
	}
	if asm == nil {
		ep.tokenURL = strings.TrimSuffix(issuer, "/") + "/token"
		return ep, nil
	}
	if asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("authorization server %s has no token endpoint", issuer)
	}
	if pinned != "" && asm.Issuer != "" && !issuersEqual(asm.Issuer, pinned) {
		return nil, &IssuerError{Pinned: pinned, Named: asm.Issuer}
	}
	ep.tokenURL = asm.TokenEndpoint
	ep.authStyle = authStyleFor(asm.TokenEndpointAuthMethodsSupported)
	return ep, nil
}

// prmCandidates are the places of the protected-resource metadata, each
// with the resource it must name: the challenge's URL, then at the path of
// the MCP endpoint, then at the root (MCP authorization spec, "Protected
// Resource Metadata Discovery Requirements").
func prmCandidates(metadataURL, serverURL string) [][2]string {
	var out [][2]string
	if metadataURL != "" {
		out = append(out, [2]string{metadataURL, serverURL})
	}
	ru, err := url.Parse(serverURL)
	if err != nil {
		return out
	}
	mu := *ru
	mu.RawQuery, mu.Fragment = "", ""
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	out = append(out, [2]string{mu.String(), serverURL})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *ru
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	out = append(out, [2]string{mu.String(), root.String()})
	return out
}

// authStyleFor prefers client_secret_post, as the OAuth 2.1 draft does, then
// client_secret_basic; otherwise x/oauth2 finds out.
func authStyleFor(supported []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// challengeOf reads a 401 or 403 answer's Bearer challenge: the
// resource_metadata URL, and the error code ("insufficient_scope").
func challengeOf(resp *http.Response) (metadataURL, errCode string) {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return "", ""
	}
	for _, c := range cs {
		if metadataURL == "" {
			metadataURL = c.Params["resource_metadata"]
		}
		if c.Scheme == "bearer" && errCode == "" {
			errCode = c.Params["error"]
		}
	}
	return metadataURL, errCode
}
