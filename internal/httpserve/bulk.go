package httpserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/principal"
)

// Large strings cross the HTTP face by reference, as they cross the stdio
// face (internal/bulk; docs/architecture.md): go-sdk's handlers then decode,
// route and encode messages of a few hundred bytes, not the 8 MiB string a
// call carries.
//
// Two owners hold them. A Streamable HTTP POST's tools/call arguments are
// lifted before go-sdk reads the body, and are held by the POST and by the
// call while it runs (a lease): go-sdk writes the answer of a call on its
// POST's response, and its handler of the POST returns only once it is
// written, or once the caller has gone, which does not end the call (before
// protocol 2026-07-28, go-sdk cancels a call only on
// notifications/cancelled), so the call holds its arguments too until it
// returns. A call that begins after its POST has ended has lost them, and
// fails without running. The strings the hosted connection lifts from a
// result belong to the call's scope (tools: bulk.Table.WithScope), which
// go-sdk ends after the answer is written. Every response of both faces is
// lowered as it is written, so no reference leaves colibri.
//
// The legacy SSE face's POSTs are not lifted: a POST is answered 202 before
// its call runs, and the answer travels on the session's event stream.

// leaseHeader carries, from liftPOST to holdLease, the key of the lease
// on a POST's lifted strings (go-sdk hands a request's HTTP header to its
// handler in mcp.RequestExtra). One a caller sends names no lease of ours:
// only colibri knows the face's id that begins every key.
const leaseHeader = "Colibri-Bulk-Lease"

// leases are the large strings lifted from POSTs, each held by its POST and
// by its call while that runs; the last to let go releases them.
type leases struct {
	table *bulk.Table
	id    string // this face's, before each key: an MCP server may have two faces

	mu sync.Mutex
	m  map[string]*lease
}

func newLeases(table *bulk.Table) leases {
	return leases{table: table, id: rand.Text() + "-"}
}

// ours reports whether key is a key of l.
func (l *leases) ours(key string) bool { return strings.HasPrefix(key, l.id) }

type lease struct {
	refs    []bulk.Ref
	holders int
}

// open returns the key of a new lease on refs, held by the POST.
func (l *leases) open(refs []bulk.Ref) string {
	key := l.id + rand.Text()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*lease{}
	}
	l.m[key] = &lease{refs: refs, holders: 1}
	return key
}

// hold adds a holder to the lease key, and reports false when it is gone.
func (l *leases) hold(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.m[key]; e != nil {
		e.holders++
		return true
	}
	return false
}

// drop lets go of the lease key; the last holder releases its strings, and
// drop reports whether it was the last.
func (l *leases) drop(key string) bool {
	l.mu.Lock()
	e := l.m[key]
	if e.holders--; e.holders > 0 {
		l.mu.Unlock()
		return false
	}
	delete(l.m, key)
	l.mu.Unlock()
	l.table.Release(e.refs...)
	return true
}

// holdLease is a receiving middleware of the MCP server, outside colibri's
// own (so that a call holds its strings until its audit line is written):
// a tools/call whose POST lifted its arguments holds them while it runs;
// one whose POST has ended (its caller gone before the call began) fails
// without running (Options.Refused records it).
func (s *Server) holdLease(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		key := ""
		if extra := req.GetExtra(); method == "tools/call" && extra != nil {
			key = extra.Header.Get(leaseHeader)
		}
		if !s.leases.ours(key) {
			return next(ctx, method, req)
		}
		if !s.leases.hold(key) {
			if s.opts.Refused != nil {
				return s.opts.Refused(ctx, method, req, s.refuseLateCall)
			}
			return s.refuseLateCall(ctx, method, req)
		}
		defer s.leases.drop(key)
		return next(ctx, method, req)
	}
}

// refuseLateCall is the face's answer to a call that began after its POST
// had ended (run by Options.Refused, whose ctx carries the request's id).
func (s *Server) refuseLateCall(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
	s.log.InfoContext(ctx, "http: a call began after its caller had gone; its large strings are gone, so it does not run")
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "colibri: the request ended before its call began"}
}

// liftPOST lifts the large strings of a POST's tools/call arguments, which
// stay in the table until go-sdk's handler of that POST has returned and
// the call has (holdLease); other requests pass untouched.
func (s *Server) liftPOST(next http.Handler) http.Handler {
	table := s.opts.Bulk
	if table == nil {
		return next
	}
	limit := s.opts.MaxBodyBytes
	if limit <= 0 {
		limit = mcp.DefaultMaxRequestBodyBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only colibri says which lease a call holds (below).
		r.Header.Del(leaseHeader)
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		// A call is made on a session, and the caller's session is checked
		// before its body is read (go-sdk refuses another principal's, or
		// one unknown, without reading it): so here too.
		// (A 2026-07-28 request has no session: it was authenticated, and
		// is all there is.)
		if id := r.Header.Get("Mcp-Session-Id"); !isModern(r) && (id == "" || !s.sessions.mayHold(id, principal.From(r.Context()))) {
			next.ServeHTTP(w, r)
			return
		}
		parts, n, err := readBody(r.Body, r.ContentLength, limit)
		if err != nil || n > limit {
			// go-sdk answers both (a 400, or a 413 from its own bound,
			// which reads past this one): it is handed the body as read.
			var rest io.Reader = r.Body
			if err != nil {
				rest = errReader{err}
			}
			r.Body = bodyOf(parts, rest, r.Body)
			next.ServeHTTP(w, r)
			return
		}
		body, refs := table.LiftParts(parts, "params", "arguments")
		switch {
		case refs != nil && isToolsCall(body):
			// Released once go-sdk has written (or dropped) the answer and
			// the call has returned.
			key := s.leases.open(refs)
			defer func() {
				if !s.leases.drop(key) {
					// (go-sdk writes an answer after the call returns.)
					s.log.Debug("http: a POST ended before its call returned (its caller left, or its session closed); the call keeps its large strings until it returns")
				}
			}()
			r = r.Clone(r.Context())
			r.Header.Set(leaseHeader, key)
		case refs != nil:
			// Only a call's arguments are lifted: anything else goes whole.
			table.Release(refs...)
			body = nil
		}
		if body != nil {
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		} else {
			r.Body, r.ContentLength = bodyOf(parts, nil, r.Body), n
		}
		next.ServeHTTP(w, r)
	})
}

// lowerResponses lowers every write of a response (both faces: a hosted
// result's strings are lifted whichever face the call came through).
func (s *Server) lowerResponses(next http.Handler) http.Handler {
	table := s.opts.Bulk
	if table == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&lowering{ResponseWriter: w, table: table, log: s.log}, r)
	})
}

// bodyPiece is the size of the pieces a body is read in.
const bodyPiece = 64 << 10

// readBody reads at most limit+1 bytes of a body (one past the bound, to
// tell a body over it), in pieces of at most 64 KiB: memory grows with the
// bytes that arrive, whatever length the caller claims (length, -1 when
// unknown, only ever makes a piece smaller: a small body costs its size),
// and an 8 MiB body is held once, in pieces that internal/bulk lifts from
// (bulk.Table.LiftParts), never gathered or grown by copying. n is the
// bytes read.
func readBody(body io.Reader, length, limit int64) (parts [][]byte, n int64, err error) {
	for n <= limit {
		size := int64(bodyPiece)
		if room := limit - n; room < size {
			size = room + 1 // to one past the bound (limit+1 could wrap around)
		}
		if left := length - n; length >= 0 && left >= 0 && left < size {
			// What the body says is left, and a byte to see its end: a
			// small body costs its size, not a piece (a claimed length is
			// only ever a smaller piece).
			size = left + 1
		}
		piece := make([]byte, 0, size)
		for len(piece) < cap(piece) && err == nil {
			var k int
			k, err = body.Read(piece[len(piece):cap(piece)])
			piece = piece[:len(piece)+k]
		}
		if len(piece) > 0 {
			parts = append(parts, piece)
			n += int64(len(piece))
		}
		if err == io.EOF {
			return parts, n, nil
		}
		if err != nil {
			return parts, n, err
		}
	}
	return parts, n, nil
}

// bodyOf is a request body that reads parts, then rest.
func bodyOf(parts [][]byte, rest io.Reader, closer io.Closer) io.ReadCloser {
	readers := make([]io.Reader, 0, len(parts)+1)
	for _, p := range parts {
		readers = append(readers, bytes.NewReader(p))
	}
	if rest != nil {
		readers = append(readers, rest)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(readers...), closer}
}

// isToolsCall reports whether msg is a tools/call request (with an id).
func isToolsCall(msg []byte) bool {
	m, err := jsonrpc.DecodeMessage(msg)
	r, ok := m.(*jsonrpc.Request)
	return err == nil && ok && r.IsCall() && r.Method == "tools/call"
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// lowering writes a response with the large strings its messages refer to
// put back (bulk.Table.Lower). go-sdk writes each message in one Write (an
// SSE event, or a JSON body), so a reference is never split between two.
type lowering struct {
	http.ResponseWriter
	table *bulk.Table
	log   *slog.Logger
}

func (w *lowering) Write(p []byte) (int, error) {
	parts, err := w.table.Lower(p)
	switch {
	case errors.Is(err, bulk.ErrReleased):
		// Written after its call had ended: the caller cancelled it as its
		// answer was on the way (go-sdk still writes that answer), or the
		// session closed. Expected, and nobody awaits it.
		w.log.Debug("http: the message of a call that had ended held a large string colibri no longer has; answering an internal error instead", "err", err)
		parts = [][]byte{lostAnswer(p)}
	case err != nil:
		// A reference the table never made: never written as it is.
		w.log.Error("http: a message held a large string colibri no longer has; answering an internal error instead", "err", err)
		parts = [][]byte{lostAnswer(p)}
	}
	for _, part := range parts {
		if _, err := w.ResponseWriter.Write(part); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Unwrap lets http.ResponseController reach the writer below (go-sdk
// flushes each event through one).
func (w *lowering) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// lostAnswer is what is written in place of a write that could not be
// lowered: the same SSE event (or JSON body) with the answer replaced by an
// internal error under its id, or nothing when it is not an answer (only
// tools/call answers carry references).
func lostAnswer(p []byte) []byte {
	start, end := 0, len(p)
	if i := bytes.Index(p, []byte("data: ")); i == 0 || (i > 0 && p[i-1] == '\n') {
		start = i + len("data: ")
		if j := bytes.IndexByte(p[start:], '\n'); j >= 0 {
			end = start + j
		}
	}
	msg, err := jsonrpc.DecodeMessage(p[start:end])
	r, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || !r.ID.IsValid() {
		return nil
	}
	answer, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: r.ID, Error: &jsonrpc.Error{
		Code: jsonrpc.CodeInternalError, Message: "colibri: internal error: part of this message was lost"}})
	if err != nil {
		return nil
	}
	return bytes.Join([][]byte{p[:start], answer, p[end:]}, nil)
}
