package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pool"
	"github.com/colibri-mcp/colibri-mcp/internal/spare"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// spares are the started processes of per_request entries with "spare"
// (docs/registry.md#spare-processes-ready-before-the-request), kept by internal/spare. This file wires the
// keeper to the host: a spare is built by internal/launch and started by start, exactly as
// a request's process is (the same environment, jail, and whatever
// confinement launch adds), holding a process slot that it takes only
// when one is free and no request waits for one.
type spares = spare.Keeper[*process, *registry.Server]

func (h *Host) newSpares() *spares {
	o := h.opts
	return spare.New(spare.Options[*process, *registry.Server]{
		Start:   h.startSpare,
		Discard: h.discardSpare,
		Died: func(p *process) error {
			e := &failure.Error{Kind: failure.KindCrashed, Server: p.Server(), Phase: failure.PhaseSpawn,
				Err: fmt.Errorf("the spare process %s before a request took it", p.DescribeEnd()), StderrTail: p.Tail()}
			return &spareEnd{err: e, clean: p.ExitedCleanly()} // Died runs once p has exited
		},
		Same:        func(a, b *registry.Server) bool { return a == b || pool.Fingerprint(a) == pool.Fingerprint(b) },
		Backoff:     h.backoff,
		Threshold:   o.CircuitThreshold,
		Cooldown:    o.Cooldown,
		CooldownMax: o.CooldownMax,
		Go:          h.background,
		Log:         h.log,
	})
}

// spareEntry is srv as the keeper keeps it.
func (h *Host) spareEntry(srv *registry.Server) spare.Entry[*registry.Server] {
	return spare.Entry[*registry.Server]{Name: srv.Name, Want: srv.Spare, Idle: srv.IdleTimeout(),
		Early: srv.Timeout(h.opts.Timeout), Spec: srv}
}

// keepsSpares reports whether srv's requests may take spares.
func (h *Host) keepsSpares(srv *registry.Server) bool {
	return srv.Spare > 0 && !h.opts.NoSpares && srv.URL == "" && !srv.IsPersistent()
}

// startSpare starts one spare of srv, if a process slot is free and no
// request is waiting for one.
func (h *Host) startSpare(_ string, srv *registry.Server) (*process, error) {
	if h.waiting.Load() > 0 {
		return nil, spare.ErrNoSlot
	}
	select {
	case h.slots <- struct{}{}:
	default:
		return nil, spare.ErrNoSlot
	}
	// ${NAME} is expanded now: a changed variable reaches the next spare.
	cmd, redact, err := h.launch.Command(srv)
	if err != nil {
		h.releaseSlot()
		return nil, err
	}
	p, err := h.start(h.base, srv, cmd, redact)
	if err != nil {
		h.releaseSlot()
		return nil, err
	}
	p.Logger().Debug("spare started; nothing is sent to it before a request takes it")
	return p, nil
}

// discardSpare ends a spare that no request took, its whole tree, and
// gives back its slot. Nothing was ever sent to it: there is no session to
// close politely.
func (h *Host) discardSpare(p *process) {
	p.Stop(0)
	h.releaseSlot()
	h.reapAdopted()
}

// takeSpare hands a request a started process of srv, when one is ready.
// While srv's spares keep exiting at start it fails fast (unavailable,
// with the last one's stderr tail), as a persistent server's circuit does.
func (h *Host) takeSpare(ctx context.Context, srv *registry.Server) (*process, error) {
	if !h.keepsSpares(srv) {
		return nil, nil
	}
	p, ok, err := h.spares.Take(h.spareEntry(srv))
	if oe, open := err.(*spare.OpenError); open {
		var end *spareEnd
		if errors.As(oe.Last, &end) && end.clean {
			// Its spares leave on their own (status 0: an idle watchdog,
			// say) before any request comes; the circuit keeps them from
			// respawning, but the server runs: the request starts its own
			// process, as it would without spares.
			return nil, nil
		}
		return nil, unavailableSpares(srv.Name, oe)
	}
	if !ok {
		return nil, nil
	}
	p.Logger().DebugContext(ctx, "a request took the spare") // with the request's id
	return p, nil
}

// refillSpares starts the spares srv lacks, once a request is answered
// (never during it: a replacement's start would compete with it for the
// CPU).
func (h *Host) refillSpares(srv *registry.Server) {
	if h.keepsSpares(srv) {
		h.spares.Refill(srv.Name)
	}
}

// unavailableSpares is the failure of a request while srv's spares keep
// exiting at start: kind unavailable, with the last one's stderr tail.
func unavailableSpares(server string, oe *spare.OpenError) *failure.Error {
	e := &failure.Error{Kind: failure.KindUnavailable, Server: server, Phase: failure.PhaseSpawn, Err: oe,
		Hint: "see stderr_tail and colibri's log; fix the server, or edit its registry entry to retry now"}
	var last *failure.Error
	if errors.As(oe.Last, &last) {
		e.StderrTail = last.StderrTail
	}
	return e
}

// spareEnd is how a spare ended before a request took it.
type spareEnd struct {
	err   *failure.Error
	clean bool // exit status 0: it left on its own; it did not die at start
}

func (e *spareEnd) Error() string { return e.err.Error() }
func (e *spareEnd) Unwrap() error { return e.err }

// syncSpares keeps the spares of reg's entries, and discards those of
// entries removed or edited.
func (h *Host) syncSpares(reg *registry.Registry) {
	if h.opts.NoSpares {
		return
	}
	var entries []spare.Entry[*registry.Server]
	for _, name := range reg.Names() {
		if srv := reg.Servers[name]; h.keepsSpares(srv) {
			entries = append(entries, h.spareEntry(srv))
		}
	}
	h.spares.Sync(entries, true)
}

// SpareStatus is what the host knows of a server's spares.
type SpareStatus struct {
	Ready        int            // started, waiting for a request
	Starting     int            // being started now (their start not returned yet)
	Hits, Misses uint64         // requests that found one, and those that did not
	Open         *failure.Error // while spares keep exiting at start: unavailable, with the stderr tail
}

// Spares describes server's spares now. It starts nothing.
func (h *Host) Spares(server string) SpareStatus {
	c := h.spares.Counts(server)
	st := SpareStatus{Ready: h.spares.Ready(server), Starting: h.spares.Starting(server), Hits: c.Hits, Misses: c.Misses}
	if oe := h.spares.Open(server); oe != nil {
		st.Open = unavailableSpares(server, oe)
	}
	return st
}
