package httpserve

import (
	"net/http"
	"sync"
	"time"
)

// inflight counts work in flight, so that a shutdown can wait for it.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero while someone waits
}

func (f *inflight) add() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inflight) done() {
	f.mu.Lock()
	f.n--
	if f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

// track counts the POST requests being served. (A Streamable HTTP GET stream
// never ends by itself, so the http.Server's own idea of "active" cannot be
// waited for.)
func (f *inflight) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		f.add()
		defer f.done()
		next.ServeHTTP(w, r)
	})
}

// wait waits until nothing is in flight, at most until deadline; it reports
// whether that happened.
func (f *inflight) wait(deadline time.Time) bool {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return true
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}
