package tools

//lint:file-ignore SA1019 serve --only relays logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have it (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
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
	first, err := o.subscribed(subKey{c.Partition, uri}, r.Session)
	if err != nil || !first {
		return err // refused, or already subscribed on this partition's process
	}
	_, err = ask(o, ctx, srv, c, "resources/subscribe", func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	if err != nil {
		o.unsubscribed(subKey{c.Partition, uri}, r.Session)
	}
	return err
}

// subscribed books ss's subscription to k's URI on k's partition, and
// reports whether it is the first (the one to pass on).
func (o *only) subscribed(k subKey, ss *mcp.ServerSession) (first bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.subs[k] == nil {
		n := 0
		for sk := range o.subs {
			if sk.part == k.part {
				n++
			}
		}
		if n >= maxSubscriptions {
			return false, &jsonrpc.Error{Code: codeRefused, Message: fmt.Sprintf("colibri: too_large: this caller already holds %d subscriptions on %s; unsubscribe from some first", maxSubscriptions, o.name)}
		}
		o.subs[k] = map[*mcp.ServerSession]bool{}
	}
	first = len(o.subs[k]) == 0
	o.subs[k][ss] = true
	return first, nil
}

// unsubscribed ends ss's subscription to k's URI, and reports whether it
// was the last (the hosted subscription ends with it).
func (o *only) unsubscribed(k subKey, ss *mcp.ServerSession) (last bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.subs[k]
	if m == nil || !m[ss] {
		return false
	}
	delete(m, ss)
	if len(m) > 0 {
		return false
	}
	delete(o.subs, k)
	return true
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
	if !o.unsubscribed(subKey{c.Partition, r.Params.URI}, r.Session) {
		return nil // other sessions of this caller still hold it, or it was never held
	}
	_, err = ask(o, ctx, srv, c, "resources/unsubscribe", func(ctx context.Context, cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: r.Params.URI})
	})
	return err
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
