package session

//lint:file-ignore SA1019 colibri relays logging between a caller and a hosted server on purpose: both sides still speak the protocol versions that have it (deprecated, not removed, in 2026-07-28).

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"
)

// A hosted server may send progress and log notifications as fast as it
// can write them: 400,000 during one call cost colibri 7.3 s of CPU, most
// of it relaying each to the caller. Each operation's relay is therefore
// damped (docs/protocol.md, "Notifications are damped"):
//
//   - progress: the first progressBurst at once, then at most one every
//     progressEvery; what comes between is held back, the latest value
//     replacing the one before, and delivered when its turn comes, or
//     before the result when the call ends first. The caller always gets
//     the last progress the server sent before its result.
//   - logs: the first logBurst at once, then at most one every logEvery;
//     the others are dropped and counted, and when the operation ends one
//     log message tells the caller how many (and colibri's log, at warn).
//
// Every progress notification still extends the call's timeout.
const (
	progressBurst = 20
	progressEvery = 50 * time.Millisecond
	logBurst      = 100
	logEvery      = 10 * time.Millisecond
)

// damping is a route's state of the bounds above. It is read and written
// under the router's lock.
type damping struct {
	progress, logs pace
	// heldProgress is the latest progress held back (its raw params),
	// flush the timer that delivers it when the pace allows.
	heldProgress json.RawMessage
	flush        *time.Timer
	droppedLogs  int
	ended        bool // the route has ended: flush must not deliver
}

// pace is a rate with a burst, as a virtual schedule (GCRA): one event is
// allowed every `every`, and up to burst at once after a quiet spell.
type pace struct {
	due time.Time // when the schedule would allow the next event with no burst left
}

// allow reports whether an event at now fits the pace, and counts it if so.
func (p *pace) allow(now time.Time, every time.Duration, burst int) bool {
	if p.due.Before(now) {
		p.due = now
	}
	if p.due.Sub(now) > time.Duration(burst-1)*every {
		return false
	}
	p.due = p.due.Add(every)
	return true
}

// wait is how long after now the next event will fit.
func (p *pace) wait(now time.Time, every time.Duration, burst int) time.Duration {
	return max(0, p.due.Sub(now)-time.Duration(burst-1)*every)
}

// clock is the router's time: time.Now.
func (r *router) clock() time.Time { return time.Now() }

// progressToken reads the token of a progress notification's params, and
// nothing else of them: a progress held back is never decoded whole.
// Colibri's tokens are strings; any other is no call of colibri's.
func progressToken(raw json.RawMessage) (string, bool) {
	var p struct {
		Token any `json:"progressToken"`
	}
	if _, err := sdkjson.Parse(raw, &p, sdkjson.ZeroCopy|sdkjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return "", false
	}
	token, ok := p.Token.(string)
	return token, ok
}

// holdProgress reports whether the progress raw, for rt, is held back by
// its pace (it then replaces the one held before it, and a timer delivers
// it when the pace allows). It is called with r.mu held.
func (rt *route) holdProgress(r *router, raw json.RawMessage) bool {
	if rt.heldProgress != nil {
		rt.heldProgress = raw // the flush timer is set: only the latest is kept
		return true
	}
	now := r.clock()
	if rt.progress.allow(now, progressEvery, progressBurst) {
		return false
	}
	rt.heldProgress = raw
	rt.flush = time.AfterFunc(rt.progress.wait(now, progressEvery, progressBurst), func() { r.flushProgress(rt) })
	return true
}

// flushProgress delivers the progress held back for rt, in its turn.
func (r *router) flushProgress(rt *route) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt.flush = nil
	if rt.ended || rt.heldProgress == nil {
		return
	}
	raw := rt.heldProgress
	rt.heldProgress = nil
	rt.progress.allow(r.clock(), progressEvery, progressBurst) // its turn, counted
	r.deliverProgress(rt, raw)
}

// settle ends rt's damping as the operation ends, before its queue closes:
// the progress held back is delivered (the last the server sent comes
// before the result), and the logs dropped are told, once, to the caller
// and to colibri's log. It is called with r.mu held.
func (r *router) settle(rt *route) {
	rt.ended = true
	if rt.flush != nil {
		rt.flush.Stop()
		rt.flush = nil
	}
	if rt.heldProgress != nil {
		r.deliverProgress(rt, rt.heldProgress)
		rt.heldProgress = nil
	}
	if rt.droppedLogs == 0 {
		return
	}
	n := rt.droppedLogs
	r.logger.Warn("dropped log messages of the server past the relay's bound", "dropped", n,
		"bound", fmt.Sprintf("%d, then one every %s", logBurst, logEvery))
	p := &mcp.LoggingMessageParams{Level: "warning", Logger: "colibri", Data: fmt.Sprintf(
		"colibri dropped %d log messages of server %s during this request: past the first %d, it relays one every %s",
		n, r.server, logBurst, logEvery)}
	rt.deliver(func() { rt.caller.Log(rt.ctx, p) })
}
