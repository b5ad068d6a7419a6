package httpserve

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
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
