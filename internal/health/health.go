// Package health tells the operator whether colibri's registry is good: a
// warn line once per distinct bad content (with the file and the JSON
// location), an info line when it is good again, the state for GET /readyz
// and the registry's metrics. Every read of the registry reports here.
//
//	h := health.New(health.Options{Logger: log, Valid: m.RegistryValid, Invalid: m.RegistryError})
//	reg, err := loader.Load()
//	h.Observe(err)
//	ok, reason := h.Ready() // reason: "external-mcp.json: /servers/a/argz: unknown key …"
package health

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Options are where the state goes; every field may be nil.
type Options struct {
	Logger  *slog.Logger
	Valid   func(bool) // the state after each read (colibri_registry_valid)
	Invalid func()     // a bad content not seen just before (colibri_registry_errors_total)
}

// Registry is the registry's state as the reads found it. Its zero value is
// not ready; use New.
type Registry struct {
	opts Options

	mu     sync.Mutex
	known  bool   // a read was observed
	bad    string // the last error's text ("" while good)
	reason string // for /readyz: no folder
	state  string // the state folder's problem for this registry ("" when none)
}

// New returns a Registry that has seen no read yet.
func New(opts Options) *Registry {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Registry{opts: opts}
}

// Observe records the outcome of one read of the registry (nil: it read
// and validated). It logs at warn when the registry turns bad or its
// problem changes, and at info when it turns good after being bad.
func (r *Registry) Observe(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		if r.bad != "" {
			r.opts.Logger.Info("registry valid again")
		}
		r.known, r.bad, r.reason = true, "", ""
		r.report(true)
		return
	}
	text := err.Error()
	if r.known && text == r.bad {
		r.report(false)
		return
	}
	file, loc, msg := where(err)
	_, _, pub := where(registry.PublicError(err))
	attrs := []any{"file", file}
	if loc != "" {
		attrs = append(attrs, "location", loc)
	}
	attrs = append(attrs, "error", msg)
	var re *registry.Error
	if errors.As(err, &re) && len(re.Problems) > 1 {
		attrs = append(attrs, "problems", len(re.Problems))
	}
	r.opts.Logger.Warn("registry invalid: every tool answers with a config error until it is fixed", attrs...)
	r.known, r.bad = true, text
	r.reason = filepath.Base(file)
	if loc != "" {
		r.reason += ": " + loc
	}
	r.reason += ": " + pub
	if r.opts.Invalid != nil {
		r.opts.Invalid()
	}
	r.report(false)
}

func (r *Registry) report(valid bool) {
	if r.opts.Valid != nil {
		r.opts.Valid(valid)
	}
}

// ObserveState records whether the registry last read needs a state folder
// that cannot be used (internal/statedir; nil: it does not, or the folder is
// fine). It logs at warn when that turns bad or its words change, and at
// info when it is fine again. The registry itself stays valid: the entries
// that do not need the folder are served.
func (r *Registry) ObserveState(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		if r.state != "" {
			r.opts.Logger.Info("state folder usable again")
		}
		r.state = ""
		return
	}
	if text := err.Error(); text != r.state {
		r.opts.Logger.Warn("state folder unusable: requests that need it fail with a config error until it is fixed", "error", text)
		r.state = text
	}
}

// Ready says whether the last read validated and the state folder it needs
// can be used; when not, reason is the first problem: the file's name
// without its folder, the JSON location and the message, or the state
// folder's.
func (r *Registry) Ready() (ok bool, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.known:
		return false, "the registry has not been read yet"
	case r.bad != "":
		return false, r.reason
	case r.state != "":
		return false, r.state
	}
	return true, ""
}

// where splits a registry error into its file, the first problem's
// location and message.
func where(err error) (file, loc, msg string) {
	var re *registry.Error
	if !errors.As(err, &re) || len(re.Problems) == 0 {
		return "", "", err.Error()
	}
	p := re.Problems[0]
	return re.File, p.Location, p.Message
}

// WatchEvery is how often Watch reads the registry for the operator's sake,
// between requests: a registry broken while nobody calls is logged all the
// same. (A read costs a stat while the file is unchanged.)
const WatchEvery = 5 * time.Second

// Watch calls read (a read of the registry, which reports here) now and
// every WatchEvery until the returned stop is called or ctx ends; stop
// returns once no read runs.
func Watch(ctx context.Context, read func()) (stop func()) {
	read()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(WatchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				read()
			}
		}
	}()
	return func() { cancel(); <-done }
}
