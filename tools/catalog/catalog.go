// Package catalog keeps what colibri's own MCP servers offer in step with
// the registry: colibri's three tools, whose descriptions name the
// registry's servers, and in aggregate mode (--aggregate) every hosted tool
// too, under a name of its own (PREFIX__TOOL, ExposedNames), routed back to
// the hosted tool by a table, never by taking the name apart.
//
//	cat := catalog.New(catalog.Options{Registry: read, List: list, Own: handlerOf, Hosted: callHosted, ...})
//	host.WatchLists(cat.Heard)
//	cat.Attach(server) // offers the tools on server, and keeps them current
//	ref, ok := cat.Route("github__search_issues")
package catalog

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools/describe"
)

// Catalog keeps what colibri's MCP servers offer in step with the registry
// and, in aggregate mode, with the hosted servers' tool lists.
//
// The registry is looked at on every tools/list and tools/call, and every
// RegistryPoll by a ticker, so that an edit reaches idle callers too; a
// look is one stat, since the registry.Loader parses the file again only
// when its size or modification time changed (and then hands out a new
// *Registry, which is how a change is told from none). When what is offered
// changes, the changed tools are added again (go-sdk's AddTool replaces a
// tool of the same name) and the gone ones removed; go-sdk then sends one
// debounced notifications/tools/list_changed to every session, once the
// whole change is made, however long it took (notify.go).
//
// In aggregate mode it also holds each server's last tool list, fills it in
// the background (at start, for a new or edited entry, again after a failure
// with back-off, and after a warm server's list_changed), and hears of every
// list the host reads for any other reason (Heard, which tools hands
// Host.WatchLists): a per_request server is never started for a tools/list.
type Catalog struct {
	opts      Options
	log       *slog.Logger
	ctx       context.Context // ends with Close: the poll and the fills
	cancel    context.CancelFunc
	bg        sync.WaitGroup
	fillSlots chan struct{} // bounds the fills running at once

	mu      sync.Mutex
	started bool // the poll runs (the first Attach started it)
	closed  bool
	servers []*mcp.Server // every server attached

	reads, applied uint64             // registry reads begun; the one the offer was built from
	reg            *registry.Registry // as last read; nil when it could not be
	regErr         error
	lastGood       *registry.Registry // the last registry that could be read: its policy decides meanwhile
	pinGen         uint64             // the pins' generation the offer was built with
	offered        map[string]offer   // what the servers have now, by name

	// Aggregate mode.
	lists        map[string]*hostedList // by server name
	routes       map[string]ToolRef     // an exposed name -> the hosted tool
	exposed      map[ToolRef]string     // the other way, for list_tools
	withdrawn    map[string]ToolRef     // the names of tools the pins hide (changed since pinned), for a call by one
	skipped      map[ToolRef]string     // tools left out, and why (each logged once)
	made         map[ToolRef]madeOffer  // the offer made of each hosted tool last time
	exposedFrom  string                 // hostedKey of what exposed and routes were built from
	pending      int                    // fills a tools/list waits for
	pendingSince time.Time              // when pending last rose from zero
	settled      chan struct{}          // closed when pending drops to zero
	held         bool                   // a list heard while pending is not published yet

	// One list_changed a publish (notify.go).
	changes   uint64                        // publishes that changed the servers' tools
	told      map[*mcp.ServerSession]uint64 // changes when each session was last sent a list_changed
	toldBound int                           // told is pruned of ended sessions past it
}

// own are colibri's own tools, in the order of the workflow: listed first,
// and never a hosted tool's name.
var own = []string{describe.ServersTool, describe.ListToolsTool, describe.CallToolTool}

// Options configure a Catalog. Every function is required, except in
// aggregate mode's absence those only it uses (List, Screen, PinCheck,
// Allowed, Hosted).
type Options struct {
	// Aggregate also offers every hosted tool as a tool of colibri's own.
	Aggregate bool
	// ExternalCall is the call gate, which the own tools' descriptions state.
	ExternalCall bool
	// RegistryPoll is how often the registry is looked at between requests
	// (Refresh); not at all when it is not positive.
	RegistryPoll time.Duration
	// ListWait bounds how long a tools/list waits (Settle) for hosted lists
	// being read before it answers with what is known.
	ListWait time.Duration
	Logger   *slog.Logger

	// Registry reads the registry as it is now.
	Registry func() (*registry.Registry, error)
	// Retain, when set, is handed each registry Refresh reads, so that
	// the host retires the warm processes and spares of the entries it no
	// longer has (host.Host.Retain) without waiting for a request.
	Retain func(*registry.Registry)
	// Own is the handler of each of colibri's own tools, by name.
	Own func(name string) mcp.ToolHandler
	// Hosted is the handler of every exposed hosted tool: it finds the
	// tool it stands for with Route.
	Hosted mcp.ToolHandler
	// List has the host read srv's tools (it tells Heard of the list).
	List func(ctx context.Context, srv *registry.Server) error
	// Screen is what the policy and the pins let everyone see of tools,
	// and those that differ from their pins (changed).
	Screen func(ctx context.Context, reg *registry.Registry, srv *registry.Server, tools []*mcp.Tool) (kept []*mcp.Tool, changed []pin.Change, err error)
	// PinCheck takes the pins' first look at a list heard (a record, a
	// file write), outside the catalog's lock.
	PinCheck func(reg *registry.Registry, srv *registry.Server, tools []*mcp.Tool)
	// PinGeneration is the pins' generation (one stat): when it moves,
	// what the pins hide is decided again.
	PinGeneration func() uint64
	// Allowed is the policy's decision on tool of srv for the caller of ctx.
	Allowed func(ctx context.Context, reg *registry.Registry, srv *registry.Server, tool *mcp.Tool) bool
}

// New returns a Catalog; Close ends what Attach started.
func New(opts Options) *Catalog {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{opts: opts, log: log, fillSlots: make(chan struct{}, maxFills), offered: map[string]offer{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if opts.Aggregate {
		c.lists = map[string]*hostedList{}
		c.routes = map[string]ToolRef{}
		c.exposed = map[ToolRef]string{}
		c.skipped = map[ToolRef]string{}
		c.made = map[ToolRef]madeOffer{}
	}
	return c
}

// Attach gives server what is offered now and keeps it current from then
// on. The first attach starts the poll (and, in aggregate mode, the first
// fill of every server's list).
func (c *Catalog) Attach(server *mcp.Server) {
	server.AddSendingMiddleware(c.coalesce)
	c.mu.Lock()
	c.servers = append(c.servers, server)
	for name, o := range c.offered {
		if err := add(server, o); err != nil {
			c.log.Error("a tool could not be offered", "tool", name, "err", err)
		}
	}
	first := !c.started && !c.closed
	if first && c.opts.RegistryPoll > 0 {
		c.bg.Go(c.poll)
	}
	c.started = true
	c.mu.Unlock()
	c.Refresh()
	if first {
		// Lists the registry named before serving began (a ListTools
		// read it) were not read then: read them now.
		c.mu.Lock()
		for _, l := range c.lists {
			if l.tools == nil && !l.filling {
				c.fill(l, true, 0)
			}
		}
		c.mu.Unlock()
	}
}

// Close stops the poll and the fills and waits for them.
func (c *Catalog) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.bg.Wait()
}

// poll looks at the registry every RegistryPoll, and retries failed fills
// when they are due.
func (c *Catalog) poll() {
	t := time.NewTicker(c.opts.RegistryPoll)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			c.Refresh()
			c.RetryDue()
		}
	}
}

// Refresh reads the registry and, when it changed, rebuilds the offer. The
// read happens outside the lock (a slow file never holds up another
// request); a read that began before one already applied is dropped, so
// that an older registry never replaces a newer one.
func (c *Catalog) Refresh() {
	c.mu.Lock()
	c.reads++
	read := c.reads
	c.mu.Unlock()
	reg, err := c.opts.Registry()
	if err == nil && c.opts.Retain != nil {
		c.opts.Retain(reg)
	}
	pinGen := c.opts.PinGeneration() // one stat: an accept by another process shows here
	c.mu.Lock()
	defer c.mu.Unlock()
	if read < c.applied {
		return
	}
	first := c.applied == 0
	c.applied = read
	if !first && reg == c.reg && errText(err) == errText(c.regErr) && pinGen == c.pinGen {
		return
	}
	c.reg, c.regErr, c.pinGen = reg, err, pinGen
	if reg != nil {
		c.lastGood = reg
	}
	if c.lists != nil && reg != nil {
		c.reconcile(reg)
	}
	c.publish()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
