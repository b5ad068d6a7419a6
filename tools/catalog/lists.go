package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/relist"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

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
	nextTry  time.Time      // after a failure: when to try again
	stale    bool           // a list_changed came: the next list tells whether it did change
	backoff  relist.Backoff // spaces the re-lists of a list that "changes" into itself
	edited   time.Time      // when an edit of the entry last asked for a read
}

// Bounds of the background fills.
const (
	maxFills      = 4                // fills at once
	firstRetry    = 30 * time.Second // after a failed fill; doubles
	maxRetryDelay = 10 * time.Minute
)

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
			// An edit is read at once, and tools/list waits for it; an
			// edit within a second of the one before is read a second
			// after that one, the last list offered meanwhile, however
			// quickly the server lists: a storm of edits reads about once
			// a second (or once more after the read running).
			if wait := relist.First - time.Since(l.edited); !l.edited.IsZero() && wait > 0 {
				c.fill(l, false, wait)
			} else {
				c.fill(l, true, 0)
			}
			l.edited = time.Now()
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
		c.fill(l, false, l.backoff.Delay())
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
		c.fill(l, false, l.backoff.Delay())
		return
	}
	if l.stale {
		l.stale = false
		l.backoff.Listed(l.tools != nil && sum == l.sum)
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
