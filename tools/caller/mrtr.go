package caller

//lint:file-ignore SA1019 colibri relays sampling and roots to a 2026-07-28 caller on purpose: the hosted servers still speak the protocol versions that have them (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/instance"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
)

// A 2026-07-28 caller has no session that a hosted server's sampling,
// elicitation or roots request could be sent on: MCP's multi-round-trip
// requests (MRTR) ask it instead. When a hosted server asks during a
// tools/call, prompts/get or resources/read, colibri answers the caller a
// result with resultType "input_required", the hosted requests as its
// inputRequests and a requestState; the hosted request stays pending, its
// process held. The caller's retry carries inputResponses and that
// requestState: colibri opens it, checks what it is bound to, hands the
// answers to the waiting hosted requests and waits again, for the result
// or the next round (docs/protocol.md#mcp-2026-07-28).
//
//	rounds := caller.NewRounds(sealer, table, log)
//	res, err := rounds.Run(ctx, caller.Call{Principal: p, Server: "s", Method: "tools/call",
//		Params: req.Params, Timeout: callTimeout, Caller: base},
//		func(ctx context.Context) (mcp.Result, error) { … caller.For(ctx, …) … })

// MaxPending bounds the continuations one principal keeps waiting for its
// input: each holds a hosted process (and a --max-procs slot).
const MaxPending = 8

// defaultWait is how long a continuation waits for its caller when the
// call has no timeout of its own.
const defaultWait = time.Minute

// stateKind is the kind of colibri's requestState tokens (internal/instance).
const stateKind = "mrtr"

// Rounds keeps the continuations of 2026-07-28 callers' requests. Its
// methods are safe for concurrent use.
type Rounds struct {
	sealer *instance.Sealer
	bulk   *bulk.Table // the face's: a params digest reads the strings it lifted
	log    *slog.Logger
	now    func() time.Time

	mu    sync.Mutex
	byID  map[string]*pending
	count map[string]int // pending continuations of each principal
}

// NewRounds returns the continuations of one serving colibri, sealed with
// sealer (one per serve: another instance, or a restart, starts a
// continuation over). table is the face's table of large strings (nil:
// none); log (nil: discard) is told of continuations that end unanswered.
func NewRounds(sealer *instance.Sealer, table *bulk.Table, log *slog.Logger) *Rounds {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Rounds{sealer: sealer, bulk: table, log: log, now: time.Now,
		byID: map[string]*pending{}, count: map[string]int{}}
}

// Call is one round of a 2026-07-28 caller's request that may need its
// input.
type Call struct {
	// Principal is the caller's (reqctx.Principal); Server the entry's
	// name; Method the request's ("tools/call", "prompts/get",
	// "resources/read"); Params its params, whose digest (less _meta,
	// inputResponses and requestState) the requestState is bound to.
	Principal, Server, Method string
	Params                    mcp.Params
	// Timeout is how long the continuation waits for the caller to come
	// back with its input (the call's timeout): then it is cancelled and
	// its process released.
	Timeout time.Duration
	// Caller is this round's caller (For): the hosted server's log and
	// progress go to the round being answered.
	Caller *session.Caller
}

// pending is one continuation: a hosted request running on behalf of a
// caller who is answered a round at a time.
type pending struct {
	rs        *Rounds
	principal string
	cancel    context.CancelFunc // ends the hosted request
	// release lets go of the first request's large strings (internal/bulk),
	// which the hosted request was sent and its answer is lifted for: they
	// are kept until the answer is written, whichever round writes it.
	release func()
	asks    chan *ask     // the hosted server's requests, as it sends them
	done    chan struct{} // closed when the hosted request has returned res, err
	res     mcp.Result
	err     error

	// Under rs.mu.
	id     string
	listed bool // in rs.byID: a requestState names it
	round  int
	busy   bool            // a round is being answered
	open   map[string]*ask // the last round's input requests, by key
	seq    int
	timer  *time.Timer
	cur    *session.Caller // the caller of the round being answered; nil between rounds
}

// ask is one request of the hosted server waiting for the caller.
type ask struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse // buffered: one answer
}

type pendingKey struct{}

// continuationOf is the continuation whose hosted request ctx runs, or nil.
func continuationOf(ctx context.Context) *pending {
	p, _ := ctx.Value(pendingKey{}).(*pending)
	return p
}

// state is what a requestState carries, sealed.
type state struct {
	ID     string `json:"i"`
	Round  int    `json:"r"`
	Who    string `json:"p"` // a digest of the principal, not its name
	Server string `json:"s"`
	Method string `json:"m"`
	Digest string `json:"d"`
}

// Run answers one round of c: the final result of the hosted request, or
// an input_required result of c.Method carrying what the hosted server
// asks and the requestState to continue with. run is the hosted request:
// it is called once per continuation (the first round, or one that starts
// over), under a context that outlives the round, and it describes the
// caller to the host with For under that context. A requestState of
// another instance, of an earlier run, past its expiry, or whose
// continuation has ended starts the request over; one forged, another
// principal's or issued for other params is refused (-32602), nothing sent.
func (rs *Rounds) Run(ctx context.Context, c Call, run func(context.Context) (mcp.Result, error)) (mcp.Result, error) {
	if c.Timeout <= 0 {
		c.Timeout = defaultWait
	}
	digest := rs.digest(c.Params)
	token, answers := continuing(c.Params)
	if token != "" {
		p, err := rs.resume(ctx, c, digest, token, answers)
		if err != nil {
			return nil, err
		}
		if p != nil {
			return rs.wait(ctx, c, digest, p)
		}
	}
	return rs.wait(ctx, c, digest, rs.start(ctx, c, run))
}

// start runs a new continuation's hosted request.
func (rs *Rounds) start(ctx context.Context, c Call, run func(context.Context) (mcp.Result, error)) *pending {
	p := &pending{rs: rs, principal: c.Principal, asks: make(chan *ask), done: make(chan struct{}), cur: c.Caller}
	// The hosted request outlives this round (the caller is answered
	// input_required and comes back with another request): its context
	// keeps the round's values (request id, principal) but not its end.
	hctx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), pendingKey{}, p))
	p.cancel = cancel
	p.release = bulk.OwnerFrom(ctx).Hold()
	go func() {
		defer cancel()
		res, err := run(hctx)
		p.res, p.err = res, err
		close(p.done)
	}()
	return p
}

// wait waits for what p does next while this round's caller waits: its
// result, or requests for the caller's input.
func (rs *Rounds) wait(ctx context.Context, c Call, digest string, p *pending) (mcp.Result, error) {
	select {
	case <-p.done: // a result that came while no round waited
		return rs.finished(ctx, p)
	default:
	}
	select {
	case <-p.done:
		return rs.finished(ctx, p)
	case a := <-p.asks:
		asks := []*ask{a}
		for more := true; more; {
			select {
			case a := <-p.asks: // what it asks at the same time goes in the same round
				asks = append(asks, a)
			default:
				more = false
			}
		}
		return rs.inputRequired(c, digest, p, asks)
	case <-ctx.Done():
		// The caller cancelled (or went away): so is the hosted request.
		rs.drop(p)
		p.cancel()
		<-p.done // the host returns at once when its request is cancelled
		p.release()
		return p.res, p.err
	}
}

// finished is p's result, answered to the round of ctx: the strings it
// holds are let go once that answer is written (go-sdk ends ctx then).
func (rs *Rounds) finished(ctx context.Context, p *pending) (mcp.Result, error) {
	rs.drop(p)
	context.AfterFunc(ctx, p.release)
	return p.res, p.err
}

// abandon cancels p's hosted request, and lets go of its strings once it
// has returned.
func (p *pending) abandon() {
	p.cancel()
	go func() {
		<-p.done
		p.release()
	}()
}

// inputRequired ends a round with what the hosted server asks.
func (rs *Rounds) inputRequired(c Call, digest string, p *pending, asks []*ask) (mcp.Result, error) {
	rs.mu.Lock()
	if !p.listed {
		if rs.count[p.principal] >= MaxPending {
			rs.mu.Unlock()
			p.cancel()
			<-p.done
			p.release()
			return nil, &failure.Error{Kind: failure.KindOverloaded, Server: c.Server,
				Err:  fmt.Errorf("%d requests of this caller already wait for its input (MRTR)", MaxPending),
				Hint: "answer or abandon one of them (each holds a hosted process) and call again"}
		}
		p.id = rand.Text()
		p.listed = true
		rs.byID[p.id] = p
		rs.count[p.principal]++
	}
	p.round++
	p.busy, p.cur = false, nil
	reqs := make(mcp.InputRequestMap, len(asks))
	p.open = make(map[string]*ask, len(asks))
	for _, a := range asks {
		p.seq++
		key := "colibri-" + strconv.Itoa(p.seq)
		reqs[key], p.open[key] = a.req, a
	}
	round := p.round
	p.timer = time.AfterFunc(c.Timeout, func() { rs.expire(p, round, c.Server) })
	payload, _ := json.Marshal(state{ID: p.id, Round: round, Who: who(c.Principal), Server: c.Server, Method: c.Method, Digest: digest})
	token := rs.sealer.Seal(stateKind, payload, rs.now().Add(c.Timeout))
	rs.mu.Unlock()
	return inputRequiredResult(c.Method, reqs, token)
}

// expire ends a continuation whose caller did not come back for round
// within the call's timeout: its hosted request is cancelled, and its
// process released.
func (rs *Rounds) expire(p *pending, round int, server string) {
	rs.mu.Lock()
	if p.busy || p.round != round || rs.byID[p.id] != p {
		rs.mu.Unlock()
		return
	}
	rs.dropLocked(p)
	rs.mu.Unlock()
	p.abandon()
	rs.log.Info("a 2026-07-28 caller did not come back with the input its request needs; the hosted request is cancelled",
		"server", server, "principal", p.principal)
}

// drop forgets p (its request ended).
func (rs *Rounds) drop(p *pending) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.dropLocked(p)
}

func (rs *Rounds) dropLocked(p *pending) {
	if p.timer != nil {
		p.timer.Stop()
	}
	if !p.listed || rs.byID[p.id] != p {
		return
	}
	delete(rs.byID, p.id)
	if rs.count[p.principal]--; rs.count[p.principal] <= 0 {
		delete(rs.count, p.principal)
	}
}

// Close cancels every continuation waiting for its caller (colibri is
// shutting down): their processes are released with their requests.
func (rs *Rounds) Close() {
	rs.mu.Lock()
	var all []*pending
	for _, p := range rs.byID {
		all = append(all, p)
		rs.dropLocked(p)
	}
	rs.mu.Unlock()
	for _, p := range all {
		p.abandon()
	}
}

// Pending is how many continuations wait for their callers' input (for
// tests and status).
func (rs *Rounds) Pending() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.byID)
}

// resume opens token and hands answers to the continuation it names: nil
// (and no error) when the request must start over.
func (rs *Rounds) resume(ctx context.Context, c Call, digest, token string, answers mcp.InputResponseMap) (*pending, error) {
	payload, err := rs.sealer.Open(stateKind, token, rs.now())
	var st state
	switch {
	case errors.Is(err, instance.ErrForeign), errors.Is(err, instance.ErrStale), errors.Is(err, instance.ErrExpired):
		rs.log.DebugContext(ctx, "a requestState this run cannot continue: the request starts over", "server", c.Server, "why", err)
		return nil, nil
	case err != nil:
		return nil, invalidState("it was not issued by this colibri (forged or corrupted)")
	case json.Unmarshal(payload, &st) != nil:
		return nil, invalidState("it was not issued by this colibri (forged or corrupted)")
	case st.Who != who(c.Principal):
		return nil, invalidState("it was issued to another caller")
	case st.Server != c.Server || st.Method != c.Method:
		return nil, invalidState(fmt.Sprintf("it was issued for %s on %s, not for this request", st.Method, st.Server))
	case st.Digest != digest:
		return nil, invalidState("it was issued for a request with other params")
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	p := rs.byID[st.ID]
	switch {
	case p == nil:
		rs.log.DebugContext(ctx, "a requestState whose request has ended (its caller came back too late): the request starts over", "server", c.Server)
		return nil, nil
	case p.round != st.Round:
		return nil, invalidState("its round was already answered")
	case p.busy:
		return nil, invalidState("another request is answering its round")
	}
	for key, a := range p.open {
		got, ok := answers[key]
		if !ok || got == nil {
			return nil, invalidInput(fmt.Sprintf("inputResponses lacks %q, which the last round asked", key))
		}
		if why := mismatch(a.req, got); why != "" {
			return nil, invalidInput(fmt.Sprintf("inputResponses[%q] %s", key, why))
		}
	}
	for key := range answers {
		if p.open[key] == nil {
			return nil, invalidInput(fmt.Sprintf("inputResponses has %q, which the last round did not ask", key))
		}
	}
	p.busy, p.cur = true, c.Caller
	p.timer.Stop()
	for key, a := range p.open {
		a.answer <- answers[key]
	}
	p.open = nil
	return p, nil
}

func invalidState(why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "colibri: requestState refused: " + why}
}

func invalidInput(why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "colibri: " + why}
}

// mismatch is why resp does not answer req, or "" when it does: an answer
// of another kind, or a sampling answer that a request without tools
// cannot take (a hosted server's sampling request reaches colibri without
// tools; a 2025-11-25 caller's answer is held to the same by go-sdk).
func mismatch(req mcp.InputRequest, resp mcp.InputResponse) string {
	other := "does not answer a " + methodOf(req) + " request"
	switch req.(type) {
	case *mcp.CreateMessageParams:
		switch r := resp.(type) {
		case *mcp.CreateMessageResult:
			return ""
		case *mcp.CreateMessageWithToolsResult:
			if len(r.Content) != 1 {
				return fmt.Sprintf("has %d contents; a sampling request without tools takes one", len(r.Content))
			}
			if t := contentType(r.Content[0]); t != "text" && t != "image" && t != "audio" {
				return fmt.Sprintf("is %q content; a sampling request without tools is answered text, image or audio", t)
			}
			return ""
		}
	case *mcp.ElicitParams:
		if r, ok := resp.(*mcp.ElicitResult); ok {
			return elicitMismatch(req.(*mcp.ElicitParams), r)
		}
	case *mcp.ListRootsParams:
		if _, ok := resp.(*mcp.ListRootsResult); ok {
			return ""
		}
	}
	return other
}

// elicitMismatch is why r does not answer the elicitation req, or "": an
// action MCP does not define, or accepted content that does not match the
// requested schema (go-sdk checks a 2025-11-25 caller's answer so, and
// fills the schema's defaults, before the hosted server sees it).
func elicitMismatch(req *mcp.ElicitParams, r *mcp.ElicitResult) string {
	switch r.Action {
	case "accept", "decline", "cancel":
	default:
		return fmt.Sprintf("has action %q; an elicitation is answered accept, decline or cancel", r.Action)
	}
	if r.Action != "accept" || r.Content == nil || req.RequestedSchema == nil {
		return ""
	}
	var schema *jsonschema.Schema
	b, err := json.Marshal(req.RequestedSchema)
	if err == nil {
		err = json.Unmarshal(b, &schema)
	}
	if err != nil || schema == nil {
		return "" // the hosted server's own schema, which it reads as it likes
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return ""
	}
	if err := resolved.Validate(r.Content); err != nil {
		return "does not match the elicitation's requested schema: " + failure.ClipMessage(err.Error())
	}
	if err := resolved.ApplyDefaults(&r.Content); err != nil {
		return "cannot take the requested schema's defaults: " + failure.ClipMessage(err.Error())
	}
	return ""
}

// contentType is c's type as it goes on the wire ("text", "tool_use", …).
func contentType(c mcp.Content) string {
	var wire struct {
		Type string `json:"type"`
	}
	b, err := json.Marshal(c)
	if err != nil || json.Unmarshal(b, &wire) != nil {
		return "unreadable"
	}
	return wire.Type
}

func methodOf(req mcp.InputRequest) string {
	switch req.(type) {
	case *mcp.CreateMessageParams:
		return "sampling/createMessage"
	case *mcp.ElicitParams:
		return "elicitation/create"
	}
	return "roots/list"
}

// who is a digest of a principal, which the requestState (readable by the
// caller) carries instead of the name.
func who(principal string) string {
	sum := sha256.Sum256([]byte("colibri-mrtr-principal\x00" + principal))
	return hex.EncodeToString(sum[:12])
}

// digest is a digest of params less _meta, inputResponses and
// requestState (what changes from round to round), with the face's large
// strings read back (each round lifts them under new references).
func (rs *Rounds) digest(params mcp.Params) string {
	b, err := json.Marshal(params)
	if err != nil {
		return ""
	}
	if rs.bulk != nil {
		b = rs.bulk.Flatten(b)
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) == nil {
		delete(m, "_meta")
		delete(m, "inputResponses")
		delete(m, "requestState")
		b, _ = json.Marshal(m) // sorted keys, each value compacted
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// continuing is the requestState and inputResponses params carry.
func continuing(params mcp.Params) (string, mcp.InputResponseMap) {
	switch p := params.(type) {
	case *mcp.CallToolParamsRaw:
		return p.RequestState, p.InputResponses
	case *mcp.CallToolParams:
		return p.RequestState, p.InputResponses
	case *mcp.GetPromptParams:
		return p.RequestState, p.InputResponses
	case *mcp.ReadResourceParams:
		return p.RequestState, p.InputResponses
	}
	return "", nil
}

// inputRequiredResult is method's result asking for reqs, decoded by
// go-sdk from the wire form, so that it goes out with its resultType.
func inputRequiredResult(method string, reqs mcp.InputRequestMap, token string) (mcp.Result, error) {
	b, err := json.Marshal(struct {
		ResultType    string              `json:"resultType"`
		InputRequests mcp.InputRequestMap `json:"inputRequests"`
		RequestState  string              `json:"requestState"`
	}{"input_required", reqs, token})
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "colibri: encoding the input requests: " + err.Error()}
	}
	var res mcp.Result
	switch method {
	case "prompts/get":
		res = &mcp.GetPromptResult{}
	case "resources/read":
		res = &mcp.ReadResourceResult{}
	default:
		res = &mcp.CallToolResult{}
	}
	if err := json.Unmarshal(b, res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "colibri: decoding the input requests: " + err.Error()}
	}
	return res, nil
}

// caller is base, the caller of p's hosted request, asking p's caller
// what the hosted server asks, and relaying its log and progress to the
// round being answered.
func (p *pending) caller(base *session.Caller) *session.Caller {
	c := *base
	if base.Log != nil {
		c.Log = func(ctx context.Context, m *mcp.LoggingMessageParams) {
			if cur := p.current(); cur != nil && cur.Log != nil {
				cur.Log(ctx, m)
			}
		}
	}
	if base.Progress != nil {
		c.Progress = func(ctx context.Context, m *mcp.ProgressNotificationParams) {
			if cur := p.current(); cur != nil && cur.Progress != nil {
				cur.Progress(ctx, m)
			}
		}
	}
	if base.CreateMessage != nil {
		c.CreateMessage = func(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			resp, err := p.ask(ctx, params)
			if err != nil {
				return nil, err
			}
			switch r := resp.(type) {
			case *mcp.CreateMessageResult:
				return r, nil
			case *mcp.CreateMessageWithToolsResult:
				if len(r.Content) != 1 {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
						Message: fmt.Sprintf("colibri: the caller's sampling answer has %d contents; a request without tools takes one", len(r.Content))}
				}
				return &mcp.CreateMessageResult{Meta: r.Meta, Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
			}
			return nil, errWrongAnswer
		}
	}
	if base.Elicit != nil {
		c.Elicit = func(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			resp, err := p.ask(ctx, params)
			if err != nil {
				return nil, err
			}
			if r, ok := resp.(*mcp.ElicitResult); ok {
				return r, nil
			}
			return nil, errWrongAnswer
		}
	}
	if base.ListRoots != nil {
		c.ListRoots = func(ctx context.Context, params *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
			if params == nil {
				params = &mcp.ListRootsParams{}
			}
			resp, err := p.ask(ctx, params)
			if err != nil {
				return nil, err
			}
			if r, ok := resp.(*mcp.ListRootsResult); ok {
				return r, nil
			}
			return nil, errWrongAnswer
		}
	}
	return &c
}

var errWrongAnswer = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "colibri: the caller answered another kind of request"}

// current is the caller of the round being answered, or nil between rounds.
func (p *pending) current() *session.Caller {
	p.rs.mu.Lock()
	defer p.rs.mu.Unlock()
	return p.cur
}

// ask hands req to the round waiting (or the next one) and waits for the
// caller's answer; ctx is the hosted request's (the host ends it with its
// request).
func (p *pending) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &ask{req: req, answer: make(chan mcp.InputResponse, 1)}
	select {
	case p.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-a.answer:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
