package httpserve

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
)

// Large strings cross the HTTP face by reference, as they cross the stdio
// face (internal/bulk; docs/architecture.md): go-sdk's handlers then decode,
// route and encode messages of a few hundred bytes, not the 8 MiB string a
// call carries.
//
// A Streamable HTTP POST's tools/call arguments are lifted before go-sdk
// reads the body. The request owns them (bulk.Owner), held by the POST
// until go-sdk's handler of it returns — once the answer is written, or
// once the caller has gone, which does not end the call (before protocol
// 2026-07-28, go-sdk cancels a call only on notifications/cancelled) — and
// by the call until it has returned and its context has ended (tools joins
// it, by the references its arguments carry). A call that begins after its POST has ended finds
// them released, and does not run. The strings the hosted connection
// lifts from a result belong to the same request. Every response of both
// faces is lowered as it is written, so no reference leaves colibri.
//
// The legacy SSE face's POSTs are not lifted: a POST is answered 202 before
// its call runs, and the answer travels on the session's event stream.

// liftPOST lifts the large strings of a POST's tools/call arguments, held
// for their request until go-sdk's handler of that POST has returned (and
// by the call while it runs), and refuses a message that could be read two
// ways (strict.go); other requests pass untouched.
func (s *Server) liftPOST(next http.Handler) http.Handler {
	table := s.opts.Bulk
	limit := s.opts.MaxBodyBytes
	if limit <= 0 {
		limit = mcp.DefaultMaxRequestBodyBytes
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		// A call is made on a session, and the caller's session is checked
		// before its body is read (go-sdk refuses another principal's, or
		// one unknown, without reading it): so here too.
		// (A 2026-07-28 request has no session: it was authenticated, and
		// is all there is.)
		// (Without a session id it is an initialize, or refused: read.)
		if id := r.Header.Get("Mcp-Session-Id"); !isModern(r) && id != "" && !s.sessions.mayHold(id, reqctx.Principal(r.Context())) {
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
		var refs []bulk.Ref
		body := bytes.Join(parts, nil) // (no table: tests of this face alone)
		if table != nil {
			body, refs = table.LiftParts(parts, "params", "arguments")
		}
		// (The strings lifted out of body are clean: bulk lifts only valid
		// UTF-8 without escaped surrogates.)
		if refuseUnclear(w, body, s.log) {
			table.Release(refs...)
			return
		}
		switch {
		case refs != nil && isToolsCall(body):
			// Released once go-sdk has written (or dropped) the answer and
			// the call's context has ended.
			o := table.Own(refs)
			defer func() {
				if o.Done(); o.Live() {
					// (go-sdk writes an answer after the call returns.)
					s.log.Debug("http: a POST ended before its call returned (its caller left, or its session closed); the call keeps its large strings until it returns")
				}
			}()
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
