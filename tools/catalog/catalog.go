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
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/listchange"
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

// offer is one tool as the servers have it.
type offer struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
	sum     [sha256.Size]byte // of the tool's JSON: a changed tool is added again
}

// madeOffer is the offer made of one hosted tool (src) under one name, or
// why it cannot be offered (unfit). A hosted list read again and found the
// same keeps its tools, so an offer is remade only for a tool that changed:
// a registry edit then costs a lookup per tool, not an encoding of each.
type madeOffer struct {
	src   *mcp.Tool
	name  string
	offer offer
	unfit error
}

// hostedList is one server's tools in aggregate mode. It lives as long as
// its server is in the registry: an edit of the entry updates srv and reads
// the list again, so that a storm of edits makes one read at a time (and
// one after it), never one per edit.
type hostedList struct {
	srv      *registry.Server
	tools    []*mcp.Tool // nil until listed
	byName   map[string]*mcp.Tool
	readKey  string // ProcessKey of the entry tools were read under
	sum      [sha256.Size]byte
	filling  bool
	blocking bool // a tools/list waits for this fill
	again    bool // fill once more when this fill ends (the list went stale)
	failures int
	nextTry  time.Time          // after a failure: when to try again
	stale    bool               // a list_changed came: the next list tells whether it did change
	relist   listchange.Backoff // spaces the re-lists of a list that "changes" into itself
}

// own are colibri's own tools, in the order of the workflow: listed first,
// and never a hosted tool's name.
var own = []string{describe.ServersTool, describe.ListToolsTool, describe.CallToolTool}

// Bounds of the background fills.
const (
	maxFills      = 4                // fills at once
	firstRetry    = 30 * time.Second // after a failed fill; doubles
	maxRetryDelay = 10 * time.Minute
)

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

// reconcile makes the hosted lists follow reg: a removed server's tools go;
// a new or edited entry's list is read again. An edited entry's last list
// stays offered until the new one is read (its tools do not vanish and come
// back with every edit), unless reading the new one fails. An edit of only
// the description or tool_prefix reads nothing: neither changes what the
// server lists. (With the registry unreadable the last lists stay: every
// call answers config meanwhile, and a file caught half-written does not
// make every tool vanish and come back.)
func (c *Catalog) reconcile(reg *registry.Registry) {
	for name := range c.lists {
		if _, ok := reg.Servers[name]; !ok {
			delete(c.lists, name)
		}
	}
	for ref := range c.skipped {
		if _, ok := reg.Servers[ref.Server]; !ok {
			delete(c.skipped, ref)
		}
	}
	for _, name := range reg.Names() {
		srv := reg.Servers[name]
		l := c.lists[name]
		switch {
		case l == nil:
			l = &hostedList{srv: srv}
			c.lists[name] = l
			c.fill(l, true, 0)
		case l.srv.ProcessKey() == srv.ProcessKey():
			l.srv = srv
		default:
			l.srv = srv
			l.failures = 0
			c.fill(l, true, 0) // or once more after the one running
		}
	}
}

// fill reads l's server's tools in the background, after delay; the host
// tells heard of the list. One fill per server runs at a time (a fill
// asked for meanwhile runs after it), at most maxFills in all. blocking
// fills hold up tools/list, for at most ListWait.
func (c *Catalog) fill(l *hostedList, blocking bool, delay time.Duration) {
	if !c.started || c.closed {
		return
	}
	if l.filling {
		l.again = true
		return
	}
	l.filling = true
	if blocking {
		l.blocking = true
		if c.pending++; c.pending == 1 {
			c.pendingSince = time.Now()
			c.settled = make(chan struct{})
			// The lists heard meanwhile are published together when
			// the fills end, or ListWait after they began, whichever
			// comes first: one list_changed, not one per server.
			ch := c.settled
			c.bg.Go(func() {
				t := time.NewTimer(c.opts.ListWait)
				defer t.Stop()
				select {
				case <-t.C:
					c.release()
				case <-ch:
				case <-c.ctx.Done():
				}
			})
		}
	}
	srv := l.srv // as it is now: an edit changes l.srv
	c.bg.Go(func() { c.fillDone(l, c.runFill(srv, delay)) })
}

func (c *Catalog) runFill(srv *registry.Server, delay time.Duration) error {
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.ctx.Done():
			return c.ctx.Err()
		}
	}
	select {
	case c.fillSlots <- struct{}{}:
		defer func() { <-c.fillSlots }()
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
	return c.opts.List(c.ctx, srv)
}

func (c *Catalog) fillDone(l *hostedList, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l.filling = false
	if l.blocking {
		l.blocking = false
		if c.pending--; c.pending == 0 {
			if c.held {
				c.held = false
				c.publish()
			}
			close(c.settled)
		}
	}
	if c.lists[l.srv.Name] != l || c.ctx.Err() != nil {
		return // replaced by an edit, or colibri is closing
	}
	switch {
	case err != nil:
		if l.tools != nil && l.readKey != l.srv.ProcessKey() {
			// The list offered was read under the entry as it was before
			// an edit, and the edited entry does not list: its tools go.
			l.tools, l.byName, l.sum = nil, nil, [sha256.Size]byte{}
			c.publish()
		}
		l.failures++
		delay := firstRetry
		for i := 1; i < l.failures && delay < maxRetryDelay; i++ {
			delay *= 2
		}
		l.nextTry = time.Now().Add(min(delay, maxRetryDelay))
		c.log.Warn("aggregate mode: listing a server's tools failed; they are not exposed until it lists them (tried again later, and on every list_tools of it)",
			"server", l.srv.Name, "err", err, "retry_in", min(delay, maxRetryDelay))
	default:
		l.failures = 0
	}
	if l.again {
		l.again = false
		c.fill(l, false, l.relist.Delay())
	}
}

// RetryDue starts the fills of failed servers whose back-off has passed.
func (c *Catalog) RetryDue() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lists {
		if l.failures > 0 && !l.filling && time.Now().After(l.nextTry) {
			c.fill(l, false, 0)
		}
	}
}

// Settle waits, in aggregate mode, for the fills a tools/list should see
// (those begun at start or for an edit), at most ListWait after they began.
func (c *Catalog) Settle(ctx context.Context) {
	c.mu.Lock()
	if c.pending == 0 {
		c.mu.Unlock()
		return
	}
	ch, wait := c.settled, time.Until(c.pendingSince.Add(c.opts.ListWait))
	c.mu.Unlock()
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
		c.release()
	case <-ctx.Done():
	}
}

// release publishes the lists held while fills were pending, once ListWait
// has passed since they began: a slow server does not hold up the others'.
func (c *Catalog) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held && !c.closed && time.Since(c.pendingSince) >= c.opts.ListWait {
		c.held = false
		c.publish()
	}
}

// Heard is told by the host of every list it read (tools) or of a warm
// server's list going stale (nil).
func (c *Catalog) Heard(srv *registry.Server, tools []*mcp.Tool) {
	var sum [sha256.Size]byte
	if tools != nil {
		b, _ := json.Marshal(tools) // outside the lock: a list may be large
		sum = sha256.Sum256(b)
		// The pins' first look (a record, a file write) outside the lock
		// too: exposeHosted then finds the verdict made.
		if reg := c.lastGoodRegistry(); reg != nil {
			c.opts.PinCheck(reg, srv, tools)
		}
	}
	pinGen := c.opts.PinGeneration()
	c.mu.Lock()
	defer c.mu.Unlock()
	// publish: the pins changed (this list's first sighting, or a change
	// recorded), so what they hide is decided again; or the list did.
	publish := pinGen != c.pinGen
	c.pinGen = pinGen
	defer func() {
		if publish {
			c.publish()
		}
	}()
	l := c.lists[srv.Name]
	key := srv.ProcessKey()
	if l == nil || l.srv.ProcessKey() != key {
		return // not (or no longer) in the registry as it was read
	}
	if tools == nil {
		l.stale = true
		c.fill(l, false, l.relist.Delay())
		return
	}
	if l.stale {
		l.stale = false
		l.relist.Listed(l.tools != nil && sum == l.sum)
	}
	l.failures = 0
	l.readKey = key
	if l.tools != nil && sum == l.sum {
		return
	}
	l.tools, l.sum = tools, sum
	l.byName = make(map[string]*mcp.Tool, len(tools))
	for _, t := range tools {
		if _, dup := l.byName[t.Name]; !dup {
			l.byName[t.Name] = t
		}
	}
	if c.pending > 0 && time.Since(c.pendingSince) < c.opts.ListWait {
		c.held, publish = true, false // published with the others (fillDone, release)
		return
	}
	publish = true
}

func (c *Catalog) lastGoodRegistry() *registry.Registry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastGood
}

// publish builds what should be offered now and brings every server to it.
func (c *Catalog) publish() {
	want := map[string]offer{}
	for _, t := range describe.Tools(describe.View{Registry: c.reg, RegistryErr: c.regErr, ExternalCall: c.opts.ExternalCall, Aggregate: c.lists != nil}) {
		want[t.Name] = offer{tool: t, handler: c.opts.Own(t.Name)}
	}
	// When nothing the hosted tools depend on changed (an edit of a
	// description, say), they stay offered as they are: a registry edit
	// then costs nothing per hosted tool, however many there are.
	keep := func(string) bool { return false }
	if c.lists != nil && !c.exposeHosted(want) {
		keep = func(name string) bool { _, ok := c.routes[name]; return ok }
	}
	changed := false
	for name, o := range want {
		if o.sum == ([sha256.Size]byte{}) {
			b, _ := json.Marshal(o.tool)
			o.sum = sha256.Sum256(b)
		}
		if old, ok := c.offered[name]; ok && old.sum == o.sum {
			continue
		}
		changed = true
		var err error
		for _, server := range c.servers {
			if err = add(server, o); err != nil {
				break
			}
			if afterChange != nil {
				afterChange()
			}
		}
		if err != nil {
			// go-sdk refused a hosted tool that passed addable: a last
			// resort, never fatal.
			ref := c.routes[name]
			c.skip(ref, err)
			delete(c.routes, name)
			delete(c.exposed, ref)
			delete(want, name)
			continue
		}
		c.offered[name] = o
	}
	var gone []string
	for name := range c.offered {
		if _, ok := want[name]; !ok && !keep(name) {
			gone = append(gone, name)
			delete(c.offered, name)
		}
	}
	if len(gone) > 0 {
		changed = true
		for _, server := range c.servers {
			server.RemoveTools(gone...)
		}
	}
	if changed {
		c.changes++ // (under c.mu, as the whole publish: notify.go)
	}
}

// exposeHosted adds to want every hosted tool the policy allows, named by
// ExposedNames, and routes each name to its tool; it reports false, adding
// nothing, when what they depend on has not changed since the last time. A tool go-sdk would
// refuse is left out (and logged once), before it is named: it takes no
// name from another.
//
// One list is offered to every session, so the policy is asked here for no
// caller in particular (the top-level and server rules); a caller's own
// rules, which can only narrow, are applied to each session's tools/list
// (visibleTo) and, like every rule, to each call.
func (c *Catalog) exposeHosted(want map[string]offer) bool {
	reg := c.lastGood
	if reg == nil {
		return true
	}
	key := c.hostedKey(reg)
	if key == c.exposedFrom {
		return false
	}
	c.exposedFrom = key
	var reqs []NameRequest
	defs := map[ToolRef]*mcp.Tool{}
	made := make(map[ToolRef]madeOffer, len(c.made))
	withdrawn := map[ToolRef]bool{}
	for name, l := range c.lists {
		kept, changed, err := c.opts.Screen(context.Background(), reg, l.srv, l.tools)
		if err != nil {
			c.log.Warn("aggregate mode: a server's tools are not exposed: its pins cannot be read", "server", name, "err", err)
			continue
		}
		if reg.PinMode(l.srv) == registry.PinEnforce {
			// A changed tool's name is withdrawn, not given to another:
			// it keeps its place in the naming (a new one takes none).
			for _, ch := range changed {
				if len(ch.What) == 1 && ch.What[0] == pin.WhatNew {
					continue
				}
				ref := ToolRef{Server: name, Tool: ch.Name}
				withdrawn[ref] = true
				reqs = append(reqs, NameRequest{ToolRef: ref, Prefix: l.srv.Prefix()})
			}
		}
		for _, t := range kept {
			ref := ToolRef{Server: name, Tool: t.Name}
			if _, dup := defs[ref]; dup {
				continue
			}
			m, ok := c.made[ref]
			if !ok || m.src != t {
				m = madeOffer{src: t, unfit: addable(t)}
			}
			made[ref] = m
			if m.unfit != nil {
				c.skip(ref, m.unfit)
				continue
			}
			delete(c.skipped, ref)
			defs[ref] = t
			reqs = append(reqs, NameRequest{ToolRef: ref, Prefix: l.srv.Prefix()})
		}
	}
	c.exposed = ExposedNames(reqs, own...)
	for ref := range withdrawn {
		delete(c.exposed, ref)
	}
	c.routes = make(map[string]ToolRef, len(c.exposed))
	for ref, name := range c.exposed {
		c.routes[name] = ref
		m := made[ref]
		if m.name != name {
			t := defs[ref]
			// The hosted tool as its server describes it, under its
			// exposed name, _meta included: MCP Apps' _meta.ui names a
			// ui:// resource, which colibri serves too (UIOwner, tools/resources.go).
			m.name = name
			m.offer = offer{tool: &mcp.Tool{
				Meta:         t.Meta,
				Name:         name,
				Title:        t.Title,
				Description:  t.Description,
				InputSchema:  t.InputSchema,
				OutputSchema: t.OutputSchema,
				Annotations:  t.Annotations,
				Icons:        t.Icons,
			}, handler: c.opts.Hosted}
			b, _ := json.Marshal(m.offer.tool)
			m.offer.sum = sha256.Sum256(b)
			made[ref] = m
		}
		want[name] = m.offer
	}
	c.made = made
	return true
}

// hostedKey fingerprints what the exposed hosted tools depend on: each
// server's list, prefix and policy, and the top-level policy.
func (c *Catalog) hostedKey(reg *registry.Registry) string {
	h := sha256.New()
	b, _ := json.Marshal(reg.Policy)
	h.Write(b)
	fmt.Fprintf(h, "\x00pins %d %s", c.pinGen, reg.Pin)
	names := make([]string, 0, len(c.lists))
	for name := range c.lists {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		l := c.lists[name]
		b, _ := json.Marshal(l.srv.Policy)
		fmt.Fprintf(h, "\x00%s\x00%s\x00%x\x00%t\x00%s\x00%s", name, l.srv.Prefix(), l.sum, l.tools != nil, b, l.srv.Pin)
	}
	return string(h.Sum(nil))
}

// skip logs, once per reason, that a hosted tool is not exposed.
func (c *Catalog) skip(ref ToolRef, err error) {
	if c.skipped[ref] == err.Error() {
		return
	}
	c.skipped[ref] = err.Error()
	c.log.Warn("aggregate mode: a hosted tool is not exposed (it stays callable through "+describe.CallToolTool+")",
		"server", ref.Server, "tool", ref.Tool, "reason", err)
}

// addable says why t cannot be offered, if it cannot: go-sdk's AddTool
// would refuse it (it panics on an inputSchema that is missing or not of
// type object), or a caller's SDK would. The official TypeScript SDK's
// client (Claude Desktop and many editors are built on it) checks the shape
// the MCP schema gives a tool's schemas: "type": "object", "properties" an
// object of objects (not true or false, though JSON Schema allows them),
// "required" a list of names; for the outputSchema too. One tool it
// refuses fails its whole tools/list, so that one hosted server's mistake
// would hide every tool colibri offers.
func addable(t *mcp.Tool) error {
	if t.InputSchema == nil {
		return errors.New("it has no inputSchema")
	}
	if err := portableSchema(t.InputSchema); err != nil {
		return fmt.Errorf("its inputSchema %w", err)
	}
	if t.OutputSchema != nil {
		if err := portableSchema(t.OutputSchema); err != nil {
			return fmt.Errorf("its outputSchema %w", err)
		}
	}
	return nil
}

// portableSchema says how schema (a tool's inputSchema or outputSchema)
// strays from the shape MCP gives it, if it does.
func portableSchema(schema any) error {
	b, err := json.Marshal(schema)
	if err != nil {
		return fmt.Errorf("cannot be encoded: %w", err)
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m["type"] != "object" {
		return errors.New(`is not of "type": "object", which MCP requires`)
	}
	if p, ok := m["properties"]; ok {
		props, ok := p.(map[string]any)
		if !ok {
			return errors.New(`has "properties" that is not an object, which MCP requires`)
		}
		for name, v := range props {
			if _, ok := v.(map[string]any); !ok {
				return fmt.Errorf(`has a property %q whose schema is not an object, which MCP requires`, describe.OneLine(name, 64))
			}
		}
	}
	if r, ok := m["required"]; ok {
		req, ok := r.([]any)
		if !ok {
			return errors.New(`has "required" that is not a list of names, which MCP requires`)
		}
		for _, v := range req {
			if _, ok := v.(string); !ok {
				return errors.New(`has "required" that is not a list of names, which MCP requires`)
			}
		}
	}
	return nil
}

// add offers o on server. go-sdk panics on a tool it refuses; addable
// checks what it knows of beforehand, and this recovers from the rest.
func add(server *mcp.Server, o offer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("go-sdk refused it: %v", r)
		}
	}()
	server.AddTool(o.tool, o.handler)
	return nil
}

// VisibleTo is res (a tools/list page) less the exposed hosted tools the
// policy hides from the caller of ctx: its principal's own rules narrow
// what exposeHosted offered everyone.
func (c *Catalog) VisibleTo(ctx context.Context, res *mcp.ListToolsResult) {
	if c.lists == nil || res == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	reg := c.lastGood
	if reg == nil {
		return
	}
	// colibri's own three tools first, in the order of the workflow, then
	// the hosted ones as go-sdk pages them: sorted by exposed name.
	kept := make([]*mcp.Tool, 0, len(res.Tools)) // a page of go-sdk's: not filtered in place
	for _, own := range own {
		for _, t := range res.Tools {
			if t.Name == own {
				kept = append(kept, t)
			}
		}
	}
	for _, t := range res.Tools {
		ref, hosted := c.routes[t.Name]
		switch {
		case slices.Contains(own, t.Name):
			continue // placed first
		case hosted:
			// By the index, not by a search of the list: a page is a
			// thousand tools, and a server may list tens of thousands.
			l := c.lists[ref.Server]
			tool := l.byName[ref.Tool]
			if tool == nil || !reg.Rules(l.srv).Empty() && !c.opts.Allowed(ctx, reg, l.srv, tool) {
				continue
			}
		}
		kept = append(kept, t)
	}
	res.Tools = kept
}

// Route is the hosted tool an exposed name stands for.
func (c *Catalog) Route(name string) (ToolRef, bool) {
	if c.lists == nil {
		return ToolRef{}, false // not in aggregate mode
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ref, ok := c.routes[name]
	return ref, ok
}

// ExposedName is the aggregate name of server's tool, or "".
func (c *Catalog) ExposedName(server, tool string) string {
	if c.lists == nil {
		return "" // not in aggregate mode
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exposed[ToolRef{Server: server, Tool: tool}]
}

// OutputChecked reports whether a caller may check a result of a call by
// name against an outputSchema: name is an exposed hosted tool that
// declares one, or an aggregate name no longer exposed, which the caller
// may still hold with one. colibri's own failure of such a call is then
// better without structuredContent: a client checks a result's
// structuredContent against the tool's outputSchema (the TypeScript SDK
// throws when it does not match), so that colibri_error would hide
// colibri's message behind a schema error.
func (c *Catalog) OutputChecked(name string) bool {
	if c.lists == nil || slices.Contains(own, name) {
		return false
	}
	c.mu.Lock()
	o, offered := c.offered[name]
	_, hosted := c.routes[name]
	c.mu.Unlock()
	return !offered || !hosted || o.tool.OutputSchema != nil
}

// Held is srv's list as aggregate mode last read it, or nil.
func (c *Catalog) Held(srv *registry.Server) []*mcp.Tool {
	if c.lists == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.lists[srv.Name]; l != nil && l.readKey == srv.ProcessKey() {
		return l.tools
	}
	return nil
}

// uiURI is the ui:// resource a tool's _meta names, or "" (MCP Apps: the
// caller's host reads it with resources/read).
func uiURI(t *mcp.Tool) string {
	if ui, ok := t.Meta["ui"].(map[string]any); ok {
		if u, ok := ui["resourceUri"].(string); ok {
			return u
		}
	}
	u, _ := t.Meta["ui/resourceUri"].(string) // the extension's earlier key
	return u
}

// UIOwner is the server and the tool whose _meta names uri, in the lists
// aggregate mode holds.
func (c *Catalog) UIOwner(uri string) (*registry.Server, *mcp.Tool) {
	if c.lists == nil || uri == "" {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range sortedKeys(c.lists) {
		l := c.lists[name]
		for _, t := range l.tools {
			if uiURI(t) == uri {
				return l.srv, t
			}
		}
	}
	return nil, nil
}

func sortedKeys(m map[string]*hostedList) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
