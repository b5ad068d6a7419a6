// Package reqctx is what a request's context carries of colibri's own: the
// caller's principal, the name the policy and the audit log know a caller by
// (set by the faces on the context a session is opened with; go-sdk hands
// that context's values on to every request of the session), and the
// request's id, so that every log line about the request can be found by it
// (docs/operations.md#request-ids-and-trace-context: the audit line's "id" is
// the same).
//
//	ctx = reqctx.WithPrincipal(ctx, reqctx.Stdio)
//	who := reqctx.Principal(ctx) // "stdio"
//	ctx = reqctx.WithID(ctx, reqctx.NewID())
//	log := slog.New(reqctx.Handler(inner)) // adds request_id from the context
//	log.InfoContext(ctx, "retrying")       // … request_id=3f9c2a7d41b0e6a5
package reqctx

import "context"

// Stdio is the caller's principal over stdio (docs/operations.md#who-is-calling-principals),
// and of the command line's own calls and lists (`colibri-mcp call`,
// `list-tools`, `describe`, `check --probe`): a local user, who could as well
// run colibri over stdio. (The contract names three kinds of principal and
// two transports; the command line is not a fourth.)
const Stdio = "stdio"

type principalKey struct{}

// WithPrincipal returns ctx carrying the caller's principal.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// Principal is the caller's principal, as WithPrincipal set it on the session's context,
// or "" when no face set one.
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}
