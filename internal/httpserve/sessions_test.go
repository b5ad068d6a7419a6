package httpserve

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A new Streamable HTTP session is its principal's from the moment its id
// goes out in the response's headers, not only once go-sdk's handler has
// returned: a request on it that races the end of the POST that opened it
// is judged by its owner. (Recorded late, another principal's POST in that
// window had its body read before go-sdk refused it:
// TestBulkSessionRefusedBeforeBody failed under load.)
func TestSessionIsItsPrincipalsAsItsIDGoesOut(t *testing.T) {
	s := newSessions(mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), 10)
	for _, tc := range []struct {
		name  string
		write func(http.ResponseWriter)
	}{
		{"WriteHeader", func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) }},
		{"Write", func(w http.ResponseWriter) { w.Write([]byte("{}")) }},
		{"Flush", func(w http.ResponseWriter) { http.NewResponseController(w).Flush() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "session-" + tc.name
			wrote, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
			h := s.capStreamable(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Mcp-Session-Id", id)
				tc.write(w)
				close(wrote)
				<-release // go-sdk's handler, still returning
			}))
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r = r.WithContext(reqctx.WithPrincipal(r.Context(), "alice"))
			go func() {
				defer close(done)
				h.ServeHTTP(httptest.NewRecorder(), r)
			}()
			<-wrote
			if !s.mayHold(id, "alice") || s.mayHold(id, "bob") {
				t.Errorf("while the opening POST returns: alice may hold it %v, bob %v; want true, false", s.mayHold(id, "alice"), s.mayHold(id, "bob"))
			}
			close(release)
			<-done
		})
	}
}
