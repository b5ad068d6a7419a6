package httpserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessions counts each principal's open sessions, over both transports, and
// refuses a new one past the cap.
type sessions struct {
	server *mcp.Server
	max    int

	mu         sync.Mutex
	streamable map[string]string      // Mcp-Session-Id → principal; pruned against server.Sessions()
	pending    map[string]int         // principal → new Streamable sessions being opened
	sse        map[string]*sseSession // the sessionid of /sse?sessionid= → session
	sseCalls   inflight               // requests read from SSE sessions and not yet answered
}

func newSessions(server *mcp.Server, max int) *sessions {
	return &sessions{server: server, max: max, streamable: map[string]string{}, pending: map[string]int{}, sse: map[string]*sseSession{}}
}

// countLocked is how many sessions principal holds or is opening.
func (s *sessions) countLocked(who string) int {
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
	n := s.pending[who]
	for _, p := range s.streamable {
		if p == who {
			n++
		}
	}
	for _, ss := range s.sse {
		if ss.who == who {
			n++
		}
	}
	return n
}

func (s *sessions) tooMany(w http.ResponseWriter, who string) {
	w.Header().Set("Retry-After", "60")
	refuse(w, http.StatusTooManyRequests, fmt.Sprintf("too many sessions: %s already holds %d open sessions; close one (DELETE) or wait for one to expire", who, s.max))
}

// capStreamable wraps the Streamable HTTP handler: a POST without
// Mcp-Session-Id opens a session, and counts against its principal.
func (s *sessions) capStreamable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		who := reqctx.Principal(r.Context())
		s.mu.Lock()
		if s.countLocked(who) >= s.max {
			s.mu.Unlock()
			s.tooMany(w, who)
			return
		}
		s.pending[who]++
		s.mu.Unlock()
		// The session is recorded as its principal's as the response's
		// headers go out, which name it: before its caller can send another
		// request on it (mayHold), not once go-sdk's handler has returned.
		rec := &recordSession{ResponseWriter: w, record: func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.pending[who]--; s.pending[who] == 0 {
				delete(s.pending, who)
			}
			if id := w.Header().Get("Mcp-Session-Id"); id != "" {
				s.streamable[id] = who
			}
		}}
		defer rec.once.Do(rec.record) // nothing was written
		next.ServeHTTP(rec, r)
	})
}

// recordSession calls record once, when the response's headers are about to
// be written (or, failing that, when the handler returns).
type recordSession struct {
	http.ResponseWriter
	record func()
	once   sync.Once
}

func (w *recordSession) WriteHeader(code int) {
	w.once.Do(w.record)
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordSession) Write(b []byte) (int, error) {
	w.once.Do(w.record)
	return w.ResponseWriter.Write(b)
}

func (w *recordSession) Flush() {
	w.once.Do(w.record)
	http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *recordSession) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// mayHold reports whether principal may hold the Streamable HTTP session
// id: colibri recorded it as principal's (capStreamable, before the id
// reached anyone). A session of another principal's, or one unknown, is
// go-sdk's to refuse.
func (s *sessions) mayHold(id, who string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	owner, recorded := s.streamable[id]
	return recorded && owner == who
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
	log      *slog.Logger
	instance string // this instance's name: each sessionid begins with it
}

type sseSession struct {
	who       string
	transport *mcp.SSEServerTransport
	connected chan struct{} // closed once transport is connected (its endpoint sent)
	session   *mcp.ServerSession

	// The idle timer, as go-sdk keeps it for Streamable HTTP sessions: it
	// runs only while no request of the session is being handled, and
	// restarts when one ends or an event is sent.
	timeout time.Duration // zero: the session never idles out
	mu      sync.Mutex
	busy    int         // requests being handled
	idle    *time.Timer // nil without a timeout, and once the session ended
}

// touch restarts the idle timer: the session is in use.
func (ss *sseSession) touch() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.idle != nil && ss.busy == 0 {
		ss.idle.Reset(ss.timeout)
	}
}

// begin pauses the idle timer while a request is handled.
func (ss *sseSession) begin() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.busy++
	if ss.idle != nil {
		ss.idle.Stop()
	}
}

// end restarts the idle timer once no request is left.
func (ss *sseSession) end() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.busy--; ss.busy == 0 && ss.idle != nil {
		ss.idle.Reset(ss.timeout)
	}
}

// idleNow says whether the session is idle: a timer that fired just as a
// request began does not close it.
func (ss *sseSession) idleNow() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.busy == 0 && ss.idle != nil
}

func (ss *sseSession) stopTimer() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.idle != nil {
		ss.idle.Stop()
		ss.idle = nil
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
	who := reqctx.Principal(r.Context())
	id := rand.Text()
	if h.instance != "" {
		// As a Streamable HTTP session's: a balancer routes the POSTs of
		// /sse?sessionid= to the instance that holds the stream by its
		// prefix (docs/scaling.md).
		id = h.instance + "." + id
	}
	ss := &sseSession{who: who, connected: make(chan struct{}), transport: &mcp.SSEServerTransport{
		Endpoint:            r.URL.Path + "?sessionid=" + id,
		Response:            w,
		MaxRequestBodyBytes: h.maxBody,
	}}
	var session atomic.Pointer[mcp.ServerSession]
	if h.timeout > 0 {
		ss.timeout = h.timeout
		ss.idle = time.AfterFunc(h.timeout, func() {
			if s := session.Load(); s != nil && ss.idleNow() {
				s.Close()
			}
		})
		defer ss.stopTimer()
	}
	if rw := observed(w); rw != nil {
		rw.onWrite = ss.touch // events sent: the session is in use
	}
	s := h.sessions
	s.mu.Lock()
	if s.countLocked(who) >= s.max {
		s.mu.Unlock()
		s.tooMany(w, who)
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
	ses, err := h.server.Connect(r.Context(), signalConnect{ss.transport, ss, &s.sseCalls, h.log}, nil)
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
	case ss.who != reqctx.Principal(r.Context()):
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
	ss.touch()
	if r.Body != nil {
		// Read within the transport's own bound (past it, go-sdk answers
		// as it would) and checked as a Streamable POST is (strict.go).
		limit := h.maxBody
		if limit <= 0 {
			limit = mcp.DefaultMaxRequestBodyBytes
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err == nil && int64(len(body)) <= limit && refuseUnclear(w, body, h.log) {
			return
		}
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	}
	ss.transport.ServeHTTP(w, r)
}

// signalConnect is an SSE session's transport: it says when it is
// connected, and counts the session's requests until each is answered.
type signalConnect struct {
	*mcp.SSEServerTransport
	ss    *sseSession
	calls *inflight
	log   *slog.Logger
}

func (t signalConnect) Connect(ctx context.Context) (mcp.Connection, error) {
	defer close(t.ss.connected)
	conn, err := t.SSEServerTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Connection: conn, ss: t.ss, calls: t.calls, log: t.log, pending: map[jsonrpc.ID]struct{}{}}, nil
}

// countingConn counts the requests read from an SSE session until their
// responses are written: a shutdown waits for them, and the session is not
// idle while one is pending. (Counting the handlers would be too early: the
// response is written after the handler returns.) It counts by id, as go-sdk
// answers: a request reusing the id of one in flight is dropped by go-sdk
// without an answer, and counted, it would keep the session busy for ever
// and every shutdown waiting its whole bound.
type countingConn struct {
	mcp.Connection
	ss    *sseSession
	calls *inflight
	log   *slog.Logger

	mu      sync.Mutex
	pending map[jsonrpc.ID]struct{}
	closed  bool
}

func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		_, inUse := c.pending[req.ID]
		if !c.closed && !inUse {
			c.pending[req.ID] = struct{}{}
			c.calls.add()
			c.ss.begin()
		}
		c.mu.Unlock()
		if inUse {
			c.log.Warn("SSE: a request reused the id of one in flight; go-sdk drops it unanswered", "principal", c.ss.who)
		}
	}
	return msg, err
}

func (c *countingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if _, pending := c.pending[resp.ID]; pending {
			delete(c.pending, resp.ID)
			c.calls.done()
			c.ss.end()
		}
		c.mu.Unlock()
	}
	return err
}

// Close gives up the requests that will never be answered.
func (c *countingConn) Close() error {
	c.mu.Lock()
	for id := range c.pending {
		delete(c.pending, id)
		c.calls.done()
		c.ss.end()
	}
	c.closed = true
	c.mu.Unlock()
	return c.Connection.Close()
}
