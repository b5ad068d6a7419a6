package httpserve

import (
	"fmt"
	"net/http"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
)

// Protocol 2026-07-28 has no initialize and no session: every request says
// its version in the MCP-Protocol-Version header (and in its _meta, which
// go-sdk checks against the header). go-sdk serves it over HTTP only with a
// stateless handler, and its stateful one, which serves the versions before
// it with sessions, answers such a request -32022. colibri serves both on
// the same /mcp by sending each request to the handler of its version,
// behind the same tokens, guard, bounds and logging (handler).

// modernVersion is the first protocol version without sessions.
const modernVersion = "2026-07-28"

// isModern reports whether r speaks 2026-07-28 or later: its
// MCP-Protocol-Version header says so. (A request whose header is absent is
// an initialize, or a request of a session: the header is required with
// 2026-07-28's _meta, and go-sdk refuses such a request without it.)
func isModern(r *http.Request) bool {
	v := r.Header.Get("MCP-Protocol-Version")
	return len(v) == len(modernVersion) && v >= modernVersion
}

// byVersion sends a 2026-07-28 request to modern, any other to legacy.
func byVersion(modern, legacy http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isModern(r) {
			modern.ServeHTTP(w, r)
			return
		}
		legacy.ServeHTTP(w, r)
	})
}

// capRequests wraps the stateless handler: each 2026-07-28 request is a
// session of its own while it runs (go-sdk connects one for it), and counts
// against its principal's cap of open sessions, as a Streamable HTTP or SSE
// session does (429 beyond).
func (s *sessions) capRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := reqctx.Principal(r.Context())
		s.mu.Lock()
		if s.countLocked(who) >= s.max {
			s.mu.Unlock()
			w.Header().Set("Retry-After", "1")
			refuse(w, http.StatusTooManyRequests, fmt.Sprintf("too many requests: %s already holds %d open sessions and requests; wait for one to end", who, s.max))
			return
		}
		s.pending[who]++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.pending[who]--; s.pending[who] == 0 {
				delete(s.pending, who)
			}
		}()
		next.ServeHTTP(w, r)
	})
}
