package tools

//lint:file-ignore SA1019 serve --only relays logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have it (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/policy"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// What serve --only keeps per caller and passes on: subscriptions, the
// logging level, the hosted server's notifications and list_changed.

// subscribe passes resources/subscribe on to the hosted server's warm
// session (go-sdk books the caller's subscription once it returns): a
// per_request server has no session that outlives the request, so it
// could never send the update.
func (o *only) subscribe(ctx context.Context, r *mcp.SubscribeRequest) error {
	reg, srv, err := o.entry(ctx)
	if err != nil {
		return o.failed(ctx, err)
	}
	uri := r.Params.URI
	if d := policy.DecideResource(reg.Rules(srv), uri, reqctx.Principal(ctx)); !d.Allow {
		return o.failed(ctx, o.deniedBy(ctx, "the resource "+uri, d))
	}
	if !srv.IsPersistent() {
		return &jsonrpc.Error{Code: codeRefused, Message: fmt.Sprintf(
			"colibri: %s is per_request: each request starts its own process, gone once it answers, so nothing would send this resource's updates; a subscription needs a warm server (\"lifecycle\": \"persistent\")", o.name)}
	}
	c := o.callerOf(ctx, r.Session, r.Params)
	k := subKey{c.Partition, uri}
	sub, first, err := o.subscribed(k, r.Session)
	if err != nil || !first {
		return err // refused, or in place (or on its way) on this partition's process
	}
	_, on, err := askOn(o, ctx, srv, c, "resources/subscribe", func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	if err != nil {
		o.made(k, sub, nil, nil)
		o.unsubscribed(k, r.Session)
		return err
	}
	if booked, rebooked := o.made(k, sub, on, c); !booked {
		// Every session holding it unsubscribed or ended while it was on
		// its way: it ends at once, unless the caller subscribed again
		// meanwhile (the server books one subscription a URI: its end
		// would end the new one too).
		if rebooked {
			return nil
		}
		if err := o.unsubscribeHosted(context.WithoutCancel(ctx), uri, sub); err != nil {
			o.s.log.DebugContext(ctx, "a subscription given up while it was made not ended on the hosted server", "server", o.name, "err", err)
		}
		return nil
	}
	o.follow(on)
	return nil
}

// Bounds of making subscriptions again (remakeAll): a subscription is made
// again at most maxRemakes times within remakeWindow, so that a server
// that dies each time it is subscribed is not started over and over for
// as long as a caller holds the subscription.
const (
	maxRemakes   = 3
	remakeWindow = time.Minute
)

// follow has the subscriptions made on hosted made again when it ends
// (remakeAll): one goroutine for each hosted session, until it ends or
// serve does.
func (o *only) follow(hosted *session.Session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.followed[hosted] {
		return
	}
	o.followed[hosted] = true
	go func() {
		select {
		case <-hosted.Upstream().Done():
			o.remakeAll(hosted)
		case <-o.done:
		}
	}()
}

// remakeAll makes the subscriptions callers still hold on hosted again,
// now that it has ended (a registry edit retired it, it crashed, a ping
// found it wedged): on the process that replaces it, started for this,
// while the policy still allows the URI. Each subscription's callers are
// then sent notifications/resources/updated, made again or not: the
// resource may have changed while no process watched it, and a caller
// that reads it again learns what there is (or that the server fails).
// After one that fails the rest are not tried (each would wait out its
// timeout on a server that does not answer), and a subscription made
// again maxRemakes times within remakeWindow is not made again: it is
// dropped from colibri's books, so that the caller's next
// resources/subscribe of the URI is passed on. Nothing is made again while
// colibri stops.
func (o *only) remakeAll(hosted *session.Session) {
	now := time.Now()
	type again struct {
		k   subKey
		sub *subscription
	}
	var todo []again
	var dropped []string
	o.mu.Lock()
	delete(o.followed, hosted)
	for k, sub := range o.subs {
		if sub.hosted != hosted || sub.pending {
			continue // made elsewhere since, or on its way there
		}
		sub.remade = slices.DeleteFunc(sub.remade, func(t time.Time) bool { return now.Sub(t) >= remakeWindow })
		if len(sub.remade) >= maxRemakes {
			sub.hosted, sub.caller = nil, nil
			dropped = append(dropped, k.uri)
			continue
		}
		sub.remade = append(sub.remade, now)
		sub.pending = true
		todo = append(todo, again{k, sub})
	}
	o.mu.Unlock()
	if o.stopping() {
		for _, a := range todo {
			o.made(a.k, a.sub, nil, nil)
		}
		return
	}
	for _, uri := range dropped {
		o.s.log.Warn("a subscription ended with its process and was not made again: it was made again too often", "server", o.name,
			"uri", uri, "times", maxRemakes, "within", remakeWindow)
		o.updated(uri)
	}
	failed := false
	for _, a := range todo {
		if failed {
			o.made(a.k, a.sub, nil, nil)
			o.updated(a.k.uri)
			continue
		}
		if err := o.remake(a.k, a.sub); err != nil {
			failed = true
			if o.stopping() {
				for _, rest := range todo {
					o.made(rest.k, rest.sub, nil, nil) // no longer on its way (made twice is harmless)
				}
				return
			}
			o.s.log.Warn("a subscription ended with its process and could not be made again", "server", o.name, "uri", a.k.uri, "err", err)
		}
		o.updated(a.k.uri)
	}
}

// remake makes sub, which the caller partition k.part holds, again on
// the partition's warm process, as subscribe would.
func (o *only) remake(k subKey, sub *subscription) error {
	ctx := reqctx.WithPrincipal(reqctx.WithID(context.Background(), reqctx.NewID()), k.part)
	reg, srv, err := o.entry(ctx)
	if err == nil && !srv.IsPersistent() {
		err = fmt.Errorf("%s is now per_request: nothing would send the updates", o.name)
	}
	if err == nil {
		if d := policy.DecideResource(reg.Rules(srv), k.uri, k.part); !d.Allow {
			err = o.deniedBy(ctx, "the resource "+k.uri, d)
		}
	}
	if err != nil {
		o.made(k, sub, nil, nil)
		return err
	}
	o.mu.Lock()
	c := sub.caller
	o.mu.Unlock()
	_, on, err := askOn(o, ctx, srv, c, "resources/subscribe", func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: k.uri})
	})
	if err != nil {
		o.made(k, sub, nil, nil)
		return err
	}
	if booked, rebooked := o.made(k, sub, on, c); !booked {
		if rebooked {
			return nil // as in subscribe
		}
		if err := o.unsubscribeHosted(ctx, k.uri, sub); err != nil {
			o.s.log.Debug("a subscription given up while it was made again not ended on the hosted server", "server", o.name, "err", err)
		}
		return nil
	}
	o.follow(on)
	return nil
}

// stopping reports whether serve --only is ending, or colibri's host.
func (o *only) stopping() bool {
	select {
	case <-o.done:
		return true
	default:
		return o.s.opts.Host.Closing()
	}
}

// updated tells the callers subscribed to uri that it may have changed
// (go-sdk's books say who they are). It is sent by remakeAll's goroutine
// itself, not queued: a caller holding more subscriptions than the queue
// has room for would lose some of them.
func (o *only) updated(uri string) {
	_ = o.server.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
}

// subscribed books ss's subscription to k's URI on k's partition, and
// reports whether it must be passed on: no hosted subscription is
// in place (none was made, or the process it was made on has ended:
// retired by a registry edit, crashed, found wedged) and none is on its
// way; then it is on its way, until made. A session's first subscription
// has watchEnd follow it.
func (o *only) subscribed(k subKey, ss *mcp.ServerSession) (sub *subscription, first bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	sub = o.subs[k]
	if sub == nil {
		n := 0
		for sk := range o.subs {
			if sk.part == k.part {
				n++
			}
		}
		if n >= maxSubscriptions {
			return nil, false, &jsonrpc.Error{Code: codeRefused, Message: fmt.Sprintf("colibri: too_large: this caller already holds %d subscriptions on %s; unsubscribe from some first", maxSubscriptions, o.name)}
		}
		sub = &subscription{sessions: map[*mcp.ServerSession]bool{}}
		o.subs[k] = sub
	}
	first = !sub.pending && !sub.live()
	sub.pending = sub.pending || first
	sub.sessions[ss] = true
	if !o.watched[ss] {
		o.watched[ss] = true
		go o.watchEnd(ss)
	}
	return sub, first, nil
}

// made records the answer to sub's subscribe: in place on hosted, made
// for c (nil: refused or failed). It reports whether sub is still booked;
// if not, its end is the caller's of made to send, unless rebooked: the
// caller subscribed to the URI again meanwhile, and the hosted
// subscription is the new booking's too.
func (o *only) made(k subKey, sub *subscription, hosted *session.Session, c *session.Caller) (booked, rebooked bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	sub.pending = false
	sub.hosted, sub.caller = hosted, c
	now := o.subs[k]
	return now == sub, now != nil && now != sub
}

// unsubscribed ends ss's subscription to k's URI, and returns the hosted
// subscription when it was the last session holding it (it ends with
// it), else nil.
func (o *only) unsubscribed(k subKey, ss *mcp.ServerSession) (last *subscription) {
	o.mu.Lock()
	defer o.mu.Unlock()
	sub := o.subs[k]
	if sub == nil || !sub.sessions[ss] {
		return nil
	}
	delete(sub.sessions, ss)
	if len(sub.sessions) > 0 {
		return nil
	}
	delete(o.subs, k)
	return sub
}

// holds reports whether a caller holds a subscription made on hosted,
// which only that running process can keep (Host.HoldWarm: its idle
// timeout waits while one does).
func (o *only) holds(hosted *session.Session) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, sub := range o.subs {
		if sub.hosted == hosted {
			return true
		}
	}
	return false
}

// watchEnd waits for ss to end (the caller closed it, its connection or
// its HTTP session went away) and drops its subscriptions: go-sdk drops
// its own books of them then, and the hosted subscriptions that no other
// session of the caller holds are ended on the process they were made on,
// while it runs (none is started for this). After one that fails (a
// server that does not answer) the rest are not sent: each would wait
// out its timeout.
func (o *only) watchEnd(ss *mcp.ServerSession) {
	_ = ss.Wait()
	o.mu.Lock()
	type ended struct {
		uri string
		sub *subscription
	}
	var lasts []ended
	for k, sub := range o.subs {
		if !sub.sessions[ss] {
			continue
		}
		delete(sub.sessions, ss)
		if len(sub.sessions) == 0 {
			delete(o.subs, k)
			lasts = append(lasts, ended{k.uri, sub})
		}
	}
	delete(o.watched, ss)
	o.mu.Unlock()
	for _, e := range lasts {
		if err := o.unsubscribeHosted(reqctx.WithID(context.Background(), reqctx.NewID()), e.uri, e.sub); err != nil {
			o.s.log.Debug("the subscriptions of an ended session not ended on the hosted server", "server", o.name, "err", err)
			return
		}
	}
}

// learn remembers ss's principal, forgetting sessions that have ended
// when the table has grown.
func (o *only) learn(ss *mcp.ServerSession, principal string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.who[ss] == principal {
		return
	}
	if len(o.who) >= 64 {
		live := map[*mcp.ServerSession]bool{}
		for s := range o.server.Sessions() {
			live[s] = true
		}
		for s := range o.who {
			if !live[s] {
				delete(o.who, s)
			}
		}
	}
	o.who[ss] = principal
}

func (o *only) principalOf(ss *mcp.ServerSession) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, ok := o.who[ss]
	if !ok {
		return "\x00" // a session not yet seen matches no partition
	}
	return p
}

func (o *only) unsubscribe(ctx context.Context, r *mcp.UnsubscribeRequest) error {
	_, srv, err := o.entry(ctx)
	if err != nil {
		return o.failed(ctx, err)
	}
	if !srv.IsPersistent() {
		return nil // nothing was subscribed
	}
	c := o.callerOf(ctx, r.Session, r.Params)
	last := o.unsubscribed(subKey{c.Partition, r.Params.URI}, r.Session)
	if last == nil {
		return nil // other sessions of this caller still hold it, or it was never held
	}
	// Not on ctx: go-sdk ends a 2026-07-28 caller's subscriptions
	// (subscriptions/listen) after that request's context is done, and
	// the hosted subscription must end all the same.
	return o.unsubscribeHosted(context.WithoutCancel(ctx), r.Params.URI, last)
}

// unsubscribeHosted ends the hosted subscription to uri on the session it
// was made on, while that session runs: a process started since holds
// none, and none is started for this. It is sent on that session alone,
// outside the pool's count of requests in flight, so that the idle ping
// still finds a server that does not answer (session.Request bounds it
// by the call timeout).
func (o *only) unsubscribeHosted(ctx context.Context, uri string, sub *subscription) error {
	o.mu.Lock()
	live, hosted, c := sub.live(), sub.hosted, sub.caller
	o.mu.Unlock()
	if !live {
		return nil
	}
	_, err := session.Request(ctx, hosted, c, "resources/unsubscribe", func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	var answered *jsonrpc.Error
	if err != nil && !errors.As(err, &answered) {
		return o.failed(ctx, err)
	}
	return nil // done, or the server's own answer (it had none): ended all the same
}

// setLevel remembers the caller's level (each request's session is
// offered it) and sets it on the warm session at once, since a persistent
// server's session outlives the request that opened it.
func (o *only) setLevel(ctx context.Context, r *mcp.ServerRequest[*mcp.SetLoggingLevelParams]) {
	o.s.levels.Set(o.server, r.Session, r.Params.Level)
	_, srv, err := o.entry(ctx)
	if err != nil || !srv.IsPersistent() || o.caps.Logging == nil {
		return
	}
	_, err = ask(o, ctx, srv, o.callerOf(ctx, r.Session, r.Params), "logging/setLevel", func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		if cs.InitializeResult().ProtocolVersion >= "2026-07-28" {
			return struct{}{}, nil // no logging/setLevel: the level goes in each request's _meta
		}
		return struct{}{}, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: r.Params.Level})
	})
	if err != nil {
		o.s.log.DebugContext(ctx, "logging/setLevel not passed on", "server", o.name, "err", err)
	}
}

// notified hears every notification of the hosted server's sessions
// (Host.WatchNotifications) and passes on to the caller what it may see:
// list_changed of each kind, resources/updated (to the sessions that
// subscribed, go-sdk's books), and log messages under the server's own
// logger names (go-sdk's session drops those below the level its caller
// set). Progress is relayed by the call it belongs to.
func (o *only) notified(srv *registry.Server, part, method string, params json.RawMessage) {
	if srv.Name != o.name || params == nil && method == "notifications/message" {
		return
	}
	var f func(ctx context.Context)
	switch method {
	case "notifications/tools/list_changed":
		f = func(context.Context) { o.touch(kindTools) }
	case "notifications/prompts/list_changed":
		f = func(context.Context) { o.touch(kindPrompts) }
	case "notifications/resources/list_changed":
		f = func(context.Context) { o.touch(kindResources) }
	case "notifications/resources/updated":
		var p mcp.ResourceUpdatedNotificationParams
		if json.Unmarshal(params, &p) != nil || p.URI == "" {
			return
		}
		p.Meta = nil
		f = func(ctx context.Context) { _ = o.server.ResourceUpdated(ctx, &p) }
	case "notifications/message":
		var p mcp.LoggingMessageParams
		if json.Unmarshal(params, &p) != nil {
			return
		}
		p.Meta = nil
		f = func(ctx context.Context) {
			// Only to the callers whose hosted sessions these are: a
			// server's log may say what another caller asked it.
			for ss := range o.server.Sessions() {
				if o.principalOf(ss) == part {
					_ = ss.Log(ctx, &p)
				}
			}
		}
	default:
		return
	}
	o.queue(method, f)
}

// queue has f delivered to the caller off the goroutine that reads the
// hosted server; past onlyNotes waiting it is dropped.
func (o *only) queue(method string, f func(ctx context.Context)) {
	select {
	case o.notes <- func() { f(context.Background()) }:
	default:
		o.s.log.Debug("a hosted notification was dropped: the caller is slow to read", "server", o.name, "method", method)
	}
}

// deliver sends the queued notifications until ctx ends.
func (o *only) deliver(ctx context.Context) {
	for {
		select {
		case f := <-o.notes:
			f()
		case <-ctx.Done():
			return
		}
	}
}

type featureKind int

const (
	kindTools featureKind = iota
	kindPrompts
	kindResources
)

// placeholder names what touch adds to go-sdk's own tables and removes at
// once: never listed (the lists are the hosted server's, answered by
// dispatch), it only has go-sdk send list_changed, debounced, to every
// session, in each protocol version's way (2026-07-28's
// subscriptions/listen included).
const placeholder = "colibri-only-list-changed"

// touch has go-sdk tell the caller that a list of kind changed.
func (o *only) touch(kind featureKind) {
	switch kind {
	case kindTools:
		if o.caps.Tools == nil || !o.caps.Tools.ListChanged {
			return
		}
		o.server.AddTool(&mcp.Tool{Name: placeholder, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, errors.New("not a tool")
			})
		o.server.RemoveTools(placeholder)
	case kindPrompts:
		if o.caps.Prompts == nil || !o.caps.Prompts.ListChanged {
			return
		}
		o.server.AddPrompt(&mcp.Prompt{Name: placeholder},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return nil, errors.New("not a prompt")
			})
		o.server.RemovePrompts(placeholder)
	case kindResources:
		if o.caps.Resources == nil || !o.caps.Resources.ListChanged {
			return
		}
		uri := "colibri-only:" + placeholder
		o.server.AddResource(&mcp.Resource{URI: uri, Name: placeholder},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return nil, errors.New("not a resource")
			})
		o.server.RemoveResources(uri)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
