package httpserve

import (
	"context"
	"crypto/rand"
	"fmt"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/tools"
)

// sessions counts each principal's open sessions, over both transports, and
// refuses a new one past the cap.
type sessions struct {
	server *mcp.Server
	max    int

	mu         sync.Mutex
	streamable map[string]string // Mcp-Session-Id → principal; pruned against server.Sessions()
	pending    map[string]int    // principal → new Streamable sessions being opened
	sse        map[string]*sseSession
}

func newSessions(server *mcp.Server, max int) *sessions {
	return &sessions{server: server, max: max, streamable: map[string]string{}, pending: map[string]int{}, sse: map[string]*sseSession{}}
}

// countLocked is how many sessions principal holds or is opening.
func (s *sessions) countLocked(principal string) int {
	if len(s.streamable) > 0 {
		live := map[string]bool{}
		for ss := range s.server.Sessions() {
			live[ss.ID()] = true
		}
		for id := range s.streamable {
			if !live[id] {
				delete(s.streamable, id) // closed: expired, deleted, or never initialized
			}
		}
	}
	n := s.pending[principal]
	for _, p := range s.streamable {
		if p == principal {
			n++
		}
	}
	for _, ss := range s.sse {
		if ss.principal == principal {
			n++
		}
	}
	return n
}

func (s *sessions) tooMany(w http.ResponseWriter, principal string) {
	w.Header().Set("Retry-After", "60")
	refuse(w, http.StatusTooManyRequests, fmt.Sprintf("too many sessions: %s already holds %d open sessions; close one (DELETE) or wait for one to expire", principal, s.max))
}

// capStreamable wraps the Streamable HTTP handler: a POST without
// Mcp-Session-Id opens a session, and counts against its principal.
func (s *sessions) capStreamable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		principal := tools.Principal(r.Context())
		s.mu.Lock()
		if s.countLocked(principal) >= s.max {
			s.mu.Unlock()
			s.tooMany(w, principal)
			return
		}
		s.pending[principal]++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			if s.pending[principal]--; s.pending[principal] == 0 {
				delete(s.pending, principal)
			}
			if id := w.Header().Get("Mcp-Session-Id"); id != "" {
				s.streamable[id] = principal
			}
			s.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *sessions) closeAll() {
	s.mu.Lock()
	var open []*sseSession
	for _, ss := range s.sse {
		if ss.session != nil {
			open = append(open, ss)
		}
	}
	s.mu.Unlock()
	for _, ss := range open {
		ss.session.Close()
	}
}

// sseHandler serves the 2024-11-05 HTTP+SSE transport with go-sdk's
// mcp.SSEServerTransport. (go-sdk's mcp.SSEHandler around it neither ties a
// session to its principal nor expires it, so colibri keeps the sessions
// itself: GET opens one and streams it; POST ?sessionid= delivers a message
// to it, from its own principal only.)
type sseHandler struct {
	server   *mcp.Server
	maxBody  int64
	timeout  time.Duration
	sessions *sessions
}

type sseSession struct {
	principal string
	transport *mcp.SSEServerTransport
	connected chan struct{} // closed once transport is connected (its endpoint sent)
	session   *mcp.ServerSession
	idle      *time.Timer // nil without a session timeout
}

// touch restarts the idle timer: the session is in use.
func (ss *sseSession) touch(d time.Duration) {
	if ss.idle != nil {
		ss.idle.Reset(d)
	}
}

func (h *sseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		h.open(w, r)
	case http.MethodPost:
		h.deliver(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (h *sseHandler) open(w http.ResponseWriter, r *http.Request) {
	principal := tools.Principal(r.Context())
	id := rand.Text()
	ss := &sseSession{principal: principal, connected: make(chan struct{}), transport: &mcp.SSEServerTransport{
		Endpoint:            r.URL.Path + "?sessionid=" + id,
		Response:            w,
		MaxRequestBodyBytes: h.maxBody,
	}}
	var session atomic.Pointer[mcp.ServerSession]
	if h.timeout > 0 {
		ss.idle = time.AfterFunc(h.timeout, func() {
			if s := session.Load(); s != nil {
				s.Close()
			}
		})
		defer ss.idle.Stop()
	}
	if rw, ok := w.(*responseWriter); ok {
		rw.onWrite = func() { ss.touch(h.timeout) } // events sent: the session is in use
	}
	s := h.sessions
	s.mu.Lock()
	if s.countLocked(principal) >= s.max {
		s.mu.Unlock()
		s.tooMany(w, principal)
		return
	}
	s.sse[id] = ss
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.sse, id)
		s.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	// The session's requests run with this request's context values (the
	// principal), as go-sdk's Streamable HTTP sessions do with the first
	// POST's.
	ses, err := h.server.Connect(r.Context(), signalConnect{ss.transport, ss.connected}, nil)
	if err != nil {
		http.Error(w, "connection failed", http.StatusInternalServerError)
		return
	}
	defer ses.Close()
	session.Store(ses)
	s.mu.Lock()
	ss.session = ses
	s.mu.Unlock()
	ended := make(chan struct{})
	go func() {
		ses.Wait()
		close(ended)
	}()
	select {
	case <-r.Context().Done():
	case <-ended:
	}
}

func (h *sseHandler) deliver(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "Content-Type must be 'application/json'", http.StatusUnsupportedMediaType)
		return
	}
	id := r.URL.Query().Get("sessionid")
	s := h.sessions
	s.mu.Lock()
	ss := s.sse[id]
	s.mu.Unlock()
	switch {
	case id == "":
		http.Error(w, "sessionid must be provided", http.StatusBadRequest)
		return
	case ss == nil:
		http.Error(w, "session not found", http.StatusNotFound)
		return
	case ss.principal != tools.Principal(r.Context()):
		refuse(w, http.StatusForbidden, "session belongs to another principal")
		return
	}
	// A caller may post as soon as it has read the endpoint, while the GET
	// is still inside Connect.
	select {
	case <-ss.connected:
	case <-r.Context().Done():
		return
	}
	ss.touch(h.timeout)
	ss.transport.ServeHTTP(w, r)
}

// signalConnect is an SSE transport that says when it is connected.
type signalConnect struct {
	*mcp.SSEServerTransport
	connected chan struct{}
}

func (t signalConnect) Connect(ctx context.Context) (mcp.Connection, error) {
	defer close(t.connected)
	return t.SSEServerTransport.Connect(ctx)
}
