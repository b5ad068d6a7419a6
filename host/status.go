package host

import (
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
)

// ServerStatus is what the host knows of one server's health, for metrics.
type ServerStatus struct {
	Warm        int  // warm sessions up
	CircuitOpen bool // a persistent server failing fast after repeated failures
	Up, Tried   bool // whether its last start succeeded; Tried is false until one was made
	Spare       SpareStatus
}

// Status describes server now. It starts nothing.
func (h *Host) Status(server string) ServerStatus {
	st := ServerStatus{Warm: len(h.pool.Status(server)), CircuitOpen: h.pool.CircuitOpen(server, time.Now()), Spare: h.Spares(server)}
	if v, ok := h.up.Load(server); ok {
		st.Up, st.Tried = v.(bool), true
	}
	return st
}

// Processes is how many hosted processes are alive (their slots taken).
func (h *Host) Processes() int { return len(h.slots) }

// started notes whether a start of server succeeded. A start that never
// had its chance (cancelled, no process slot, colibri shutting down) says
// nothing of the server, and is not noted.
func (h *Host) started(server string, err error) {
	if err != nil {
		switch failure.KindOf(err) {
		case failure.KindCancelled, failure.KindOverloaded, failure.KindUnavailable:
			return
		}
	}
	h.up.Store(server, err == nil)
}

func (h *Host) retried(server string, phase failure.Phase) {
	if h.opts.OnRetry != nil {
		h.opts.OnRetry(server, phase)
	}
}
