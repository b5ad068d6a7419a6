package tools

import "context"

// StdioPrincipal is the caller's principal over stdio (CONTRACT.md section 7).
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
