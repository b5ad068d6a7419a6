package tools

import "context"

// StdioPrincipal is the caller's principal over stdio (CONTRACT.md section
// 7), and of the command line's own calls and lists (`colibri-mcp call`,
// `list-tools`, `describe`, `check --probe`): a local user, who could as well
// run colibri over stdio. (The contract names three kinds of principal and
// two transports; the command line is not a fourth.)
const StdioPrincipal = "stdio"

type principalKey struct{}

// WithPrincipal returns ctx carrying the caller's principal: the name the
// policy and the audit log know the caller by. The faces set it on the
// context a session is opened with; go-sdk hands that context's values on to
// every request of the session.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// Principal is the caller's principal, as WithPrincipal set it on the
// session's context, or "" when no face set one.
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}
