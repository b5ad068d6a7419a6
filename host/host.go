// Package host runs other people's stdio MCP servers on colibri's behalf: for
// one request it starts the server's process (in its own process group, with
// an explicit environment, optionally inside a FreeBSD jail), connects a
// go-sdk client session to it with a timeout for each phase, lists its tools,
// calls one, and tears it all down after the answer is on its way.
//
//	h := host.New(host.Options{Timeout: 30 * time.Second, Logger: logger})
//	defer h.Close()
//	res, err := h.CallTool(ctx, srv, "echo", session.ArgumentsOf(map[string]any{"message": "hi"}), nil, nil)
//	if err != nil {
//		kind := failure.KindOf(err) // timeout, crashed, spawn, …
//	}
//
// Every failure is a *failure.Error whose Kind is one of the contract's
// error kinds.
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/argcheck"
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/launch"
	"github.com/colibri-mcp/colibri-mcp/internal/listcache"
	"github.com/colibri-mcp/colibri-mcp/internal/pool"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/upver"
	"github.com/colibri-mcp/colibri-mcp/jail"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Options configure a Host. The zero value of each field means its default.
type Options struct {
	// Logger receives colibri's logs about hosted servers; nil discards them.
	Logger *slog.Logger
	// Version is colibri's version, sent to hosted servers as clientInfo.
	Version string
	// Timeout is the default timeout of each phase (COLIBRI_MCP_TIMEOUT).
	Timeout time.Duration
	// MaxProcs bounds the hosted processes alive at once (COLIBRI_MCP_MAX_PROCS).
	MaxProcs int
	// MaxResultBytes bounds one message from a hosted server
	// (COLIBRI_MCP_MAX_RESULT_BYTES).
	MaxResultBytes int64
	// Retries is the number of attempts in all for a phase that failed
	// transiently (COLIBRI_MCP_RETRIES).
	Retries int
	// RetryBackoff is the first back-off; it doubles each attempt
	// (COLIBRI_MCP_RETRY_BACKOFF).
	RetryBackoff time.Duration
	// TerminateGrace is how long a server may take to exit after its stdin
	// closes, and again after SIGTERM, before its group is killed.
	TerminateGrace time.Duration
	// Bulk, if set, is the table the caller's face lifts large strings into
	// (internal/bulk): hosted servers are sent them lowered back, and the
	// large text of a result is lifted into it for a call made under one of
	// its scopes; a schema check that reads what a string says resolves
	// the references in Arguments.Value through it. Only a face that lowers
	// every message it writes through the same table may set it (colibri's
	// stdio and HTTP faces).
	Bulk *bulk.Table
	// JailPriv and JailHelper: how jail commands gain privilege.
	JailPriv   jail.Priv
	JailHelper string
	// Environ is colibri's own environment, the source of the child's few
	// inherited variables and of ${NAME} in the registry; nil means os.Environ.
	Environ func() []string
	// Launcher is colibri's own binary, run as the sandbox launcher
	// (internal/sandbox) for an entry with a sandbox; without it such an
	// entry fails with kind sandbox.
	Launcher string
	// SandboxABI, when set, replaces the kernel's Landlock ABI as colibri
	// sees it (tests play an older kernel, or one without Landlock).
	SandboxABI func() int
	// SandboxNoUserNamespaces plays a machine whose unprivileged user
	// namespaces are restricted (tests): a "net" list then has no network
	// namespace of its own, only best_effort's per-port fallback.
	SandboxNoUserNamespaces bool
	// SandboxProtect are colibri's own files (registry, pin file, audit
	// log, token and key files): no sandbox may grant a path that holds one.
	SandboxProtect []string
	// StateDir is colibri's state folder, home of the sandboxes' private
	// HOME and TMPDIR folders; "" means $XDG_STATE_HOME/colibri-mcp.
	StateDir string
	// StateErr, when set, is why StateDir cannot be used (internal/statedir):
	// an entry that needs the folder (a sandbox, OAuth tokens without a
	// token_file) fails config with these words, before anything starts;
	// every other entry runs.
	StateErr error
	// OnSpawn, when set, is told of every process started.
	OnSpawn func(server string, pid int)
	// OnRequest, when set, is told of each request colibri sent a hosted
	// server (initialize, tools/list, tools/call, ping, logging/setLevel):
	// how long it took and, when it failed, how (RequestErrorType).
	OnRequest func(server, method string, took time.Duration, errorType string)
	// OnRetry, when set, is told of each retry of a phase.
	OnRetry func(server string, phase failure.Phase)
	// OnEgressRefused and OnEgressConnection are told, per server, each
	// connection the egress proxy of a sandbox's "net" list refuses, and
	// each it makes (colibri_egress_refused_total,
	// colibri_egress_connections_total); nil: not told.
	OnEgressRefused, OnEgressConnection func(server string)

	// PingInterval is how often an idle warm session is pinged.
	PingInterval time.Duration
	// CircuitThreshold is how many process-level failures in a row make a
	// persistent server fail fast ("unavailable") for a cool-down.
	CircuitThreshold int
	// Cooldown is the first cool-down; it doubles up to CooldownMax.
	Cooldown, CooldownMax time.Duration

	// OAuth, when set, gives the OAuth handler of a remote server whose
	// entry has "oauth"; hc is the HTTP client for the handler's own
	// requests (discovery, token endpoint). Without it, such a server
	// fails with a config error.
	OAuth func(srv *registry.Server, hc *http.Client) (auth.OAuthHandler, error)

	// DrainTimeout is how long Close lets requests in flight finish before
	// it cancels them.
	DrainTimeout time.Duration

	// ReapOrphans, when set, kills and reaps the orphans of hosted servers
	// that the kernel reparented to colibri, after each teardown and at
	// Close: main sets it to proc.ReapAdopted once colibri is the reaper
	// (proc.AcquireReaper). Without it, teardown kills a server's whole
	// tree while the server lives (proc.KillTree), but a descendant that
	// left the tree before (a double-forked daemon) is not colibri's to
	// find.
	ReapOrphans func() int

	// NoSpares turns spare processes off ("spare" in the registry): for
	// one-shot commands, whose host ends before a spare would serve.
	NoSpares bool
	// ProbeTimeout bounds server/discover, asked of a server not yet known
	// to speak 2026-07-28 or not (at most a third of the initialize phase).
	ProbeTimeout time.Duration
}

// Defaults of the persistent lifecycle.
const (
	DefaultPingInterval     = 30 * time.Second
	DefaultCircuitThreshold = 3
	DefaultCooldown         = time.Second
	DefaultCooldownMax      = time.Minute
)

// Defaults of the contract (docs/registry.md#settings).
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxProcs       = 32
	DefaultMaxResultBytes = 16 << 20
	DefaultRetries        = 3
	DefaultRetryBackoff   = time.Second
	DefaultTerminateGrace = 2 * time.Second
	DefaultDrainTimeout   = 5 * time.Second
	DefaultProbeTimeout   = 2 * time.Second
)

// ProtocolVersion is the newest MCP version with initialize and sessions,
// which colibri asks of a hosted server that does not speak 2026-07-28
// (internal/upver remembers which do).
const ProtocolVersion = upver.Legacy

// Host hosts servers. It is safe for concurrent use.
type Host struct {
	opts    Options
	log     *slog.Logger
	slots   chan struct{}
	bg      tasks // teardowns running after their answer
	schemas *argcheck.Cache
	lists   listcache.Cache
	known   knownLists
	up      sync.Map // server name → bool: its last start succeeded
	pool    *pool.Pool
	spares  *spares      // per_request entries' started processes
	waiting atomic.Int32 // requests waiting for a process slot
	launch  *launch.Builder
	watch   atomic.Pointer[func(*registry.Server, []*mcp.Tool)]                     // WatchLists
	notify  atomic.Pointer[func(*registry.Server, string, string, json.RawMessage)] // WatchNotifications
	held    atomic.Pointer[func(*session.Session) bool]                             // HoldWarm

	versions *upver.Book // the protocol version each entry speaks

	// Requests, from entry to return: Close refuses new ones, waits for
	// these (bounded by DrainTimeout), then cancels what is left.
	mu       sync.Mutex
	closed   bool
	requests tasks
	base     context.Context
	cancel   context.CancelFunc
}

// reapAdopted kills and reaps the orphans of hosted servers that the
// kernel reparented to colibri (Options.ReapOrphans). A process that
// escaped its server's tree this way (double fork, setsid) outlives no
// teardown. Hosted servers may not keep daemons.
func (h *Host) reapAdopted() {
	if h.opts.ReapOrphans == nil {
		return
	}
	if n := h.opts.ReapOrphans(); n > 0 {
		h.log.Warn("killed processes that hosted servers left behind outside their process tree", "count", n)
	}
}

// New returns a Host with opts, defaults filled in.
func New(opts Options) *Host {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ
	}
	if opts.JailPriv == "" {
		opts.JailPriv = jail.PrivNone
	}
	orDefault(&opts.Timeout, DefaultTimeout)
	orDefault(&opts.MaxProcs, DefaultMaxProcs)
	orDefault(&opts.MaxResultBytes, DefaultMaxResultBytes)
	orDefault(&opts.Retries, DefaultRetries)
	orDefault(&opts.RetryBackoff, DefaultRetryBackoff)
	orDefault(&opts.TerminateGrace, DefaultTerminateGrace)
	orDefault(&opts.PingInterval, DefaultPingInterval)
	orDefault(&opts.CircuitThreshold, DefaultCircuitThreshold)
	orDefault(&opts.Cooldown, DefaultCooldown)
	orDefault(&opts.CooldownMax, DefaultCooldownMax)
	orDefault(&opts.DrainTimeout, DefaultDrainTimeout)
	orDefault(&opts.ProbeTimeout, DefaultProbeTimeout)
	h := &Host{
		opts:  opts,
		log:   opts.Logger,
		slots: make(chan struct{}, opts.MaxProcs),
	}
	h.schemas = argcheck.New(opts.Logger, opts.Bulk)
	h.launch = launch.New(launch.Config{
		Environ: opts.Environ, JailPriv: opts.JailPriv, JailHelper: opts.JailHelper,
		Launcher: opts.Launcher, SandboxABI: opts.SandboxABI, NoUserNamespaces: opts.SandboxNoUserNamespaces, SandboxProtect: opts.SandboxProtect,
		StateDir: opts.StateDir, Logger: opts.Logger,
		EgressRefused: opts.OnEgressRefused, EgressConnected: opts.OnEgressConnection,
	})
	h.base, h.cancel = context.WithCancel(context.Background())
	h.pool = pool.New(pool.Options{
		Open: h.openRetrying, Timeout: opts.Timeout, PingInterval: opts.PingInterval,
		CircuitThreshold: opts.CircuitThreshold, Cooldown: opts.Cooldown, CooldownMax: opts.CooldownMax,
		Log:    opts.Logger,
		Listed: func(srv *registry.Server, tools []*mcp.Tool, plain bool) { h.known.put(srv, tools, plain, time.Now()) },
		ToolsChanged: func(srv *registry.Server) {
			h.known.forget(srv.Name)
			h.listed(srv, nil)
		},
		Held: func(s *session.Session) bool {
			f := h.held.Load()
			return f != nil && (*f)(s)
		},
	})
	h.spares = h.newSpares()
	h.versions = upver.New()
	return h
}

// WatchLists sets f to be told of every tool list colibri reads from a
// hosted server (tools/list, every page) on a session offered no client
// capability, which is the list list_tools shows (a server may list more
// tools to a client that can sample or elicit), whether it was read for
// list_tools, for a call or for a warm session; and, with nil tools, of
// each notifications/tools/list_changed a warm session sends: the server's
// list may be stale. Aggregate mode keeps its exposed tools
// current this way, without starting a server of its own accord.
//
// f runs on the goroutine that listed: it must be quick, and must not wait
// on the host.
func (h *Host) WatchLists(f func(srv *registry.Server, tools []*mcp.Tool)) {
	h.watch.Store(&f)
}

// HoldWarm sets f to say whether callers hold something on a warm session
// that only its running process keeps (serve --only's resource
// subscriptions: the hosted server sends the updates): while f says so,
// the session's idle timeout does not close it. f is called with the
// pool's lock of that process held: it must be quick, and must not call
// the host.
func (h *Host) HoldWarm(f func(*session.Session) bool) {
	h.held.Store(&f)
}

// WatchNotifications sets f to be told of every notification a hosted
// server sends on a session opened after the call (serve --only relays
// list_changed, resources/updated and log messages this way, outside any
// request), with the Partition of the caller the session was opened for.
// f runs on the goroutine that reads the server: it must be quick, and
// must not wait on the host.
func (h *Host) WatchNotifications(f func(srv *registry.Server, partition, method string, params json.RawMessage)) {
	h.notify.Store(&f)
}

// listed tells WatchLists' func of a list (nil: a stale one).
func (h *Host) listed(srv *registry.Server, tools []*mcp.Tool) {
	if f := h.watch.Load(); f != nil && *f != nil {
		(*f)(srv, tools)
	}
}

// errClosed refuses work once Close has begun.
var errClosed = errors.New("colibri is shutting down")

// Closing reports whether Close has begun: from then on every request is
// refused, and what would start one for itself (serve --only making a
// subscription again) need not try.
func (h *Host) Closing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// enter admits one request: it fails once Close has begun, and otherwise
// returns the request's context (also ended when Close gives up waiting)
// and the func that marks its end.
func (h *Host) enter(ctx context.Context, server string) (context.Context, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil, &failure.Error{Kind: failure.KindUnavailable, Server: server, Err: errClosed}
	}
	done := h.requests.add()
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.base, cancel)
	return ctx, func() { stop(); cancel(); done() }, nil
}

// orDefault sets *v to def when it is zero or negative.
func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Close is a barrier: from its start the host refuses new requests; it
// lets those in flight finish for DrainTimeout, then cancels them; it shuts
// every warm session down, and returns once every hosted process is torn
// down and reaped. Nothing is left, and nothing starts after it.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.spares.Close()
	if !h.requests.waitFor(h.opts.DrainTimeout) {
		h.log.Warn("requests still running at the drain bound; cancelling them", "bound", h.opts.DrainTimeout)
	}
	h.cancel()
	h.requests.Wait() // cancelled requests return promptly: every phase watches its context
	h.pool.Close()
	h.bg.Wait()
	h.reapAdopted()
	h.launch.Close() // the egress proxy, once no process of it is left
}

// acquireSlot waits for one of MaxProcs process slots until ctx ends. A
// spare that waits for no request gives its slot up to one that waits.
func (h *Host) acquireSlot(ctx context.Context, server string) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	default:
	}
	h.waiting.Add(1) // no spare starts meanwhile
	defer h.waiting.Add(-1)
	for {
		readied := h.spares.Readied()
		if h.spares.Evict() {
			select {
			case h.slots <- struct{}{}:
				return nil
			default:
				continue
			}
		}
		select {
		case h.slots <- struct{}{}:
			return nil
		case <-readied: // a spare took a slot after all: evict it
			continue
		case <-ctx.Done():
		}
		if c := context.Cause(ctx); c != session.ErrPhaseTimeout && c != context.DeadlineExceeded {
			return &failure.Error{Kind: failure.KindCancelled, Server: server, Phase: failure.PhaseSpawn, Err: session.ErrCancelled}
		}
		return &failure.Error{Kind: failure.KindOverloaded, Server: server, Phase: failure.PhaseSpawn,
			Err:  fmt.Errorf("no process slot came free in time (%d hosted processes are alive)", cap(h.slots)),
			Hint: "raise COLIBRI_MCP_MAX_PROCS or lower the load"}
	}
}

func (h *Host) releaseSlot() { <-h.slots }

// background runs f after the caller has its answer; Close waits for it.
func (h *Host) background(f func()) { h.bg.Go(f) }

// tasks counts goroutines that Close must wait for. Unlike a
// sync.WaitGroup, work may start while Wait is waiting (a warm server's idle
// timer can fire during Close), and Wait waits for that too.
type tasks struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero while Wait waits
}

// Go runs f in a goroutine counted by t.
func (t *tasks) Go(f func()) {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
	go func() {
		defer func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.n--; t.n == 0 && t.idle != nil {
				close(t.idle)
				t.idle = nil
			}
		}()
		f()
	}()
}

// add counts one unit of work that is not a goroutine of t's; the returned
// func marks its end.
func (t *tasks) add() func() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if t.n--; t.n == 0 && t.idle != nil {
				close(t.idle)
				t.idle = nil
			}
		})
	}
}

// waitFor is Wait, giving up after d; it reports whether all ended.
func (t *tasks) waitFor(d time.Duration) bool {
	done := make(chan struct{})
	go func() { t.Wait(); close(done) }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// Wait waits until no counted goroutine runs.
func (t *tasks) Wait() {
	for {
		t.mu.Lock()
		if t.n == 0 {
			t.mu.Unlock()
			return
		}
		if t.idle == nil {
			t.idle = make(chan struct{})
		}
		idle := t.idle
		t.mu.Unlock()
		<-idle
	}
}
