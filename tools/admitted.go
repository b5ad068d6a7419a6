package tools

import (
	"context"
	"sync"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// A request reads the registry once. Its steps — the route, the gate, the
// pins, the call itself, the metrics' labels after it — each asked for the
// registry, and each ask cost a stat(2) of the file and the host's Retain:
// four of each on a warm call of serve --only. A request now runs under
// the registry its first step admitted, held in its context from the
// outermost middleware (withAdmission); an edit of the file is read by the
// next request, as before, and no request sees two registries on its way.

// admission is a request's registry, read (and handed to the host) once.
type admission struct {
	mu   sync.Mutex
	done bool
	reg  *registry.Registry
	err  error
}

type admissionKey struct{}

// withAdmission gives the request of ctx an admission of its own, unless
// it has one.
func withAdmission(ctx context.Context) context.Context {
	if _, ok := ctx.Value(admissionKey{}).(*admission); ok {
		return ctx
	}
	return context.WithValue(ctx, admissionKey{}, &admission{})
}

// admittedUnder is ctx with an admission under reg, read already (the fast
// path's, which read it to choose the path).
func (s *Service) admittedUnder(ctx context.Context, reg *registry.Registry) context.Context {
	s.opts.Host.Retain(reg)
	return context.WithValue(ctx, admissionKey{}, &admission{done: true, reg: reg})
}

// admit is the registry the request of ctx runs under: read, and handed to
// the host, which retires the warm processes and spares of the entries it
// no longer has, or has changed (Host.Retain), before the request uses
// any; once per request where ctx has an admission.
func (s *Service) admit(ctx context.Context) (*registry.Registry, error) {
	a, ok := ctx.Value(admissionKey{}).(*admission)
	if !ok {
		return s.admitNow()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.done {
		a.reg, a.err = s.admitNow()
		a.done = true
	}
	return a.reg, a.err
}

func (s *Service) admitNow() (*registry.Registry, error) {
	reg, err := s.readRegistry()
	if err != nil {
		return nil, err
	}
	s.opts.Host.Retain(reg)
	return reg, nil
}

// registry is the registry as a request reads it: the one it was admitted
// under, once it was; else the file as it is now (not handed to the host).
func (s *Service) registry(ctx context.Context) (*registry.Registry, error) {
	if a, ok := ctx.Value(admissionKey{}).(*admission); ok {
		a.mu.Lock()
		done, reg, err := a.done, a.reg, a.err
		a.mu.Unlock()
		if done {
			return reg, err
		}
	}
	return s.readRegistry()
}

// readRegistry reads the registry (the loader reads the file again only
// when it changed).
func (s *Service) readRegistry() (*registry.Registry, error) {
	reg, err := s.opts.Registry()
	if err != nil {
		return nil, &failure.Error{Kind: failure.KindConfig, Err: err}
	}
	return reg, nil
}
