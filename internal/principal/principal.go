// Package principal carries the caller's principal in a context: the name
// the policy and the audit log know a caller by. The faces set it on the
// context a session is opened with; go-sdk hands that context's values on to
// every request of the session.
//
//	ctx = principal.With(ctx, principal.Stdio)
//	who := principal.From(ctx) // "stdio"
package principal

import "context"

// Stdio is the caller's principal over stdio (docs/operations.md#who-is-calling-principals),
// and of the command line's own calls and lists (`colibri-mcp call`,
// `list-tools`, `describe`, `check --probe`): a local user, who could as well
// run colibri over stdio. (The contract names three kinds of principal and
// two transports; the command line is not a fourth.)
const Stdio = "stdio"

type principalKey struct{}

// With returns ctx carrying the caller's principal.
func With(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// From is the caller's principal, as With set it on the session's context,
// or "" when no face set one.
func From(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}
