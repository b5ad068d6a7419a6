package httpserve

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
)

// Large strings cross the HTTP face by reference, as they cross the stdio
// face (internal/bulk; docs/architecture.md): go-sdk's handlers then decode,
// route and encode messages of a few hundred bytes, not the 8 MiB string a
// call carries.
//
// Two owners hold them. A Streamable HTTP POST's tools/call arguments are
// lifted before go-sdk reads the body, and belong to the POST: go-sdk writes
// the answers of the calls a POST carries on that POST's response, and its
// handler returns only once they are written (or the caller has gone). The
// strings the hosted connection lifts from a result belong to the call's
// scope (tools: bulk.Table.WithScope), which go-sdk ends after the answer is
// written. Every response of both faces is lowered as it is written, so no
// reference leaves colibri.
//
// The legacy SSE face's POSTs are not lifted: a POST is answered 202 before
// its call runs, and the answer travels on the session's event stream.

// liftPOST lifts the large strings of a POST's tools/call arguments, which
// stay in the table until go-sdk's handler of that POST returns; other
// requests pass untouched.
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
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := readBody(r.Body, r.ContentLength, limit)
		if err != nil || int64(len(body)) > limit {
			// go-sdk answers both (a 400, or a 413 from its own bound,
			// which reads past this one): it is handed the body as read.
			rest := r.Body
			if err != nil {
				rest = io.NopCloser(errReader{err})
			}
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), rest), r.Body}
			next.ServeHTTP(w, r)
			return
		}
		if lifted, refs := table.Lift(body, "params", "arguments"); refs != nil {
			if isToolsCall(lifted) {
				// After go-sdk has written (or dropped) every answer of
				// this POST; the hosted server was sent them before.
				defer table.Release(refs...)
				body = lifted
			} else {
				table.Release(refs...) // only a call's arguments are lifted: anything else goes whole
			}
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
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

// readBody reads at most limit+1 bytes of a body. A body that says its
// length is read into one buffer of that size (io.ReadAll would grow one by
// doubling, copying an 8 MiB body a score of times and holding two at the
// end); a length that is missing or wrong only costs growing.
func readBody(body io.Reader, length, limit int64) ([]byte, error) {
	if length < 0 || length > limit {
		length = 0
	}
	buf := bytes.NewBuffer(make([]byte, 0, length+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	return buf.Bytes(), err
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
	if err != nil {
		// A reference the table no longer has: never written as it is.
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
