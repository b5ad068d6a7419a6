package httpserve

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/instance"
)

// Resumable SSE streams (Streamable HTTP before 2026-07-28): every event of
// a stream colibri serves carries an id (go-sdk numbers them when it has an
// event store, and opens each POST's stream with a priming event), and each
// stream opens with a retry field, so that a client whose stream dropped
// knows when to come back, and with which Last-Event-ID, to be sent what it
// missed. (2026-07-28 has no resumption: the stateless handler has none.)

const (
	// eventStoreBytes bounds what the store keeps of every stream
	// together: the oldest events go first.
	eventStoreBytes = 8 << 20
	// streamStoreBytes bounds what one stream may keep. Past it, an event
	// is not kept: delivered to a caller reading its stream, it is simply
	// not resumable; for a caller that stopped reading, it is refused, as
	// it was without a store, so that a flood to it is cut off.
	streamStoreBytes = 4 << 20
	// maxCounted bounds the per-stream counts kept (a stream has no end
	// that a store is told of); past it they start over.
	maxCounted = 16384
	// reconnectRetry is the retry field: milliseconds a client waits
	// before it reconnects a dropped stream.
	reconnectRetry = "1000"
)

var errStreamFull = errors.New("this stream's resumable events passed their bound")

// boundedStore is go-sdk's memory event store, bounded per stream too.
//
// It keeps each event as its caller is sent it, large strings put back
// (bulk.Table.Joined), counted at that size: the strings a message refers
// to belong to its request, which ends with its call, and a stream is
// resumed later (its caller had gone).
type boundedStore struct {
	inner *mcp.MemoryEventStore
	table *bulk.Table
	mu    sync.Mutex
	used  map[[2]string]int // session, stream → bytes appended
}

func newEventStore(table *bulk.Table) *boundedStore {
	s := mcp.NewMemoryEventStore(nil)
	s.SetMaxBytes(eventStoreBytes)
	return &boundedStore{inner: s, table: table, used: map[[2]string]int{}}
}

func (s *boundedStore) Open(ctx context.Context, session, stream string) error {
	return s.inner.Open(ctx, session, stream)
}

func (s *boundedStore) Append(ctx context.Context, session, stream string, data []byte) error {
	n := s.table.LoweredLen(data) // its size as the caller is sent it
	s.mu.Lock()
	k := [2]string{session, stream}
	full := s.used[k]+n > streamStoreBytes
	if !full {
		if len(s.used) >= maxCounted {
			clear(s.used)
		}
		s.used[k] += n
	}
	s.mu.Unlock()
	if full {
		// A placeholder keeps the store's indexes in step with the ids
		// go-sdk gives the events (as its priming event does).
		_ = s.inner.Append(ctx, session, stream, nil)
		return errStreamFull
	}
	// Put back only once it is known to be kept: an 8 MiB answer is never
	// copied to be dropped. (One whose strings are gone already is kept as
	// it is: the lowering writer answers it as lost on replay, as it would
	// have live.)
	if flat, err := s.table.Joined(data); err == nil {
		data = flat
	}
	return s.inner.Append(ctx, session, stream, data)
}

func (s *boundedStore) After(ctx context.Context, session, stream string, index int) iter.Seq2[[]byte, error] {
	return s.inner.After(ctx, session, stream, index)
}

func (s *boundedStore) SessionClosed(ctx context.Context, session string) error {
	s.mu.Lock()
	for k := range s.used {
		if k[0] == session {
			delete(s.used, k)
		}
	}
	s.mu.Unlock()
	return s.inner.SessionClosed(ctx, session)
}

// withRetry opens every SSE response with "retry: reconnectRetry", an
// event of its own, which dispatches nothing.
func withRetry(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&retryWriter{ResponseWriter: w}, r)
	})
}

type retryWriter struct {
	http.ResponseWriter
	once sync.Once
}

func (w *retryWriter) prime() {
	w.once.Do(func() {
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			_, _ = w.ResponseWriter.Write([]byte("retry: " + reconnectRetry + "\n\n"))
		}
	})
}

func (w *retryWriter) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if code == http.StatusOK {
		w.prime()
	}
}

func (w *retryWriter) Write(p []byte) (int, error) {
	w.prime() // no WriteHeader was called: this Write sends 200
	return w.ResponseWriter.Write(p)
}

func (w *retryWriter) FlushError() error {
	w.prime()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *retryWriter) Flush() { _ = w.FlushError() }

func (w *retryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Event ids are this instance's (docs/scaling.md, "Several instances").
// go-sdk numbers a stream's events STREAM_INDEX, which any instance would
// take for one of its own streams; colibri hands each id out sealed
// (internal/instance, kind "event") and bound to its session, and opens the
// Last-Event-ID a caller resumes with before go-sdk reads it. An id of
// another instance, or of this one before a restart, answers 404: the
// stream is not here, and the caller initializes again, as for a session
// gone. One this instance did not seal, or sealed for another session, is
// refused (400).

const eventKind = "event"

// sealEvents seals the ids of the events next writes and opens the
// Last-Event-ID of a request to it. It sits right around go-sdk's handler,
// which writes each event whole in one Write (and the lowering writer
// outside it wants each event whole, too).
func (s *Server) sealEvents(next http.Handler) http.Handler {
	sealer := s.opts.Sealer
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session := r.Header.Get("Mcp-Session-Id")
		if ids := r.Header.Values("Last-Event-ID"); len(ids) > 0 {
			inner, code, why := openEventID(sealer, session, ids, time.Now())
			if code != 0 {
				s.log.Debug("http: a Last-Event-ID refused", "status", code, "why", why)
				refuse(w, code, why)
				return
			}
			r2 := *r
			r2.Header = r.Header.Clone()
			r2.Header.Set("Last-Event-ID", inner)
			r = &r2
		}
		next.ServeHTTP(&eventWriter{ResponseWriter: w, sealer: sealer, session: session, boundary: true}, r)
	})
}

// openEventID is the go-sdk id a sealed Last-Event-ID stands for, or the
// status and reason of its refusal.
func openEventID(sealer *instance.Sealer, session string, ids []string, now time.Time) (inner string, code int, why string) {
	if len(ids) != 1 {
		return "", http.StatusBadRequest, "more than one Last-Event-ID: send the id of the last event received"
	}
	payload, err := sealer.Open(eventKind, ids[0], now)
	switch {
	case errors.Is(err, instance.ErrForeign) || errors.Is(err, instance.ErrStale):
		return "", http.StatusNotFound, "this Last-Event-ID is another instance's, or this one's before a restart (" + err.Error() + "): the stream is not here; initialize again"
	case err != nil:
		return "", http.StatusBadRequest, "this Last-Event-ID was not issued by this instance (" + err.Error() + "): refused"
	}
	sess, id, ok := strings.Cut(string(payload), "\x00")
	if !ok || sess != session {
		return "", http.StatusBadRequest, "this Last-Event-ID belongs to another session: refused"
	}
	return id, 0, ""
}

// eventWriter seals the id of each event written through it.
type eventWriter struct {
	http.ResponseWriter
	sealer   *instance.Sealer
	session  string // the request's, else the one its answer opens
	boundary bool   // the next Write begins an event
	checked  bool   // whether the body was looked at
	stream   bool   // it is an event stream
}

func (w *eventWriter) Write(p []byte) (int, error) {
	if !w.checked {
		w.checked = true
		w.stream = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
		if w.session == "" {
			w.session = w.Header().Get("Mcp-Session-Id") // initialize's answer opens it
		}
	}
	if !w.stream {
		return w.ResponseWriter.Write(p)
	}
	at := w.boundary
	w.boundary = bytes.HasSuffix(p, []byte("\n\n"))
	if at {
		if sealed, ok := sealEventID(p, func(id string) string {
			return w.sealer.Seal(eventKind, []byte(w.session+"\x00"+id), time.Time{})
		}); ok {
			if _, err := w.ResponseWriter.Write(sealed); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the writer below (go-sdk
// flushes each event through one).
func (w *eventWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sealEventID is event (one SSE event, from its first line) with the value
// of its "id:" field sealed, when it has one before its data.
func sealEventID(event []byte, seal func(string) string) ([]byte, bool) {
	for line := 0; line < len(event); {
		end := bytes.IndexByte(event[line:], '\n')
		if end <= 0 { // the event's end, or no whole line
			return nil, false
		}
		end += line
		field := event[line:end]
		if bytes.HasPrefix(field, []byte("data:")) {
			return nil, false
		}
		if v, ok := bytes.CutPrefix(field, []byte("id:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			sealed := seal(string(v))
			out := make([]byte, 0, len(event)-len(v)+len(sealed))
			out = append(out, event[:end-len(v)]...)
			out = append(out, sealed...)
			return append(out, event[end:]...), true
		}
		line = end + 1
	}
	return nil, false
}
