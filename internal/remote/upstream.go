package remote

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/redact"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Upstream is a remote MCP server reached over HTTP (a "url" entry): the
// second kind of session.Upstream, which it satisfies structurally. It holds no process slot; it ends when its MCP
// session is gone for good (the server forgot it, or the connection broke)
// or when colibri stops it.
type Upstream struct {
	conn   *Conn
	url    string // as shown: query values redacted
	log    *slog.Logger
	redact *redact.Set

	connected atomic.Bool // initialize succeeded (Connected)

	endOnce sync.Once
	endCh   chan struct{}
	why     string // how it ended; valid once endCh is closed
}

// UpstreamOptions are what Dial needs of colibri.
type UpstreamOptions struct {
	// Getenv looks a variable up in colibri's environment (${NAME}).
	Getenv func(name string) (string, bool)
	// OAuth gives the OAuth handler of an entry with "oauth"; hc is the
	// HTTP client for the handler's own requests. Nil: such an entry
	// fails with kind config.
	OAuth func(srv *registry.Server, hc *http.Client) (auth.OAuthHandler, error)
	// MaxResultBytes bounds one message.
	MaxResultBytes int64
	// Timeout is the entry's phase timeout: a third of it (at most 5 s)
	// bounds the wait for the answer to the standalone GET stream.
	Timeout time.Duration
	// Log receives the upstream's lines; server= and url= are added.
	Log *slog.Logger
}

// Dial prepares the connection to srv: ${NAME} expanded in its headers
// and bearer token (a missing variable is a config error naming it), its
// OAuth handler made. Nothing is sent yet.
func Dial(srv *registry.Server, opts UpstreamOptions) (*Upstream, error) {
	var secrets []string
	headers, bearer, err := srv.ExpandRemote(func(name string) (string, bool) {
		v, ok := opts.Getenv(name)
		if ok {
			secrets = append(secrets, v)
		}
		return v, ok
	})
	if err != nil {
		return nil, &failure.Error{Kind: failure.KindConfig, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err, Hint: expandHint(err)}
	}
	if bearer != "" {
		secrets = append(secrets, bearer)
	}
	secrets = append(secrets, srv.URLSecrets()...)
	var oauth auth.OAuthHandler
	if srv.OAuth != nil {
		if opts.OAuth == nil {
			return nil, &failure.Error{Kind: failure.KindConfig, Server: srv.Name, Phase: failure.PhaseSpawn,
				Err: errors.New("OAuth is not available in this build of colibri")}
		}
		// The handler's own requests (discovery, tokens) carry none of
		// the entry's headers; refusing private addresses for discovery,
		// unless allow_private_network, is the OAuth package's to do.
		oauth, err = opts.OAuth(srv, &http.Client{})
		if err != nil {
			var e *failure.Error
			if errors.As(err, &e) {
				return nil, e
			}
			return nil, &failure.Error{Kind: failure.KindUnauthorized, Server: srv.Name, Phase: failure.PhaseSpawn, Err: err}
		}
	}
	r := &Upstream{
		url:    srv.ShownURL(),
		log:    opts.Log.With("server", srv.Name, "url", srv.ShownURL()),
		redact: redact.New(secrets),
		endCh:  make(chan struct{}),
	}
	r.conn = New(Options{
		URL: srv.URL, Transport: srv.Transport, Headers: headers, Bearer: bearer,
		OAuth: oauth, MaxBytes: opts.MaxResultBytes,
		Timeout: srv.Timeout(opts.Timeout), Ended: r.end,
	})
	return r, nil
}

// expandHint says what to do about a header or bearer_token that ${NAME}
// expansion could not make.
func expandHint(err error) string {
	var missing *registry.MissingVarError
	var ctl *registry.ControlCharError
	switch {
	case errors.As(err, &missing):
		return registry.MissingVarHint
	case errors.As(err, &ctl):
		return "the variable's value must be one line: remove the line break or other control character from it in colibri's environment (often a trailing newline from the file it was read from)"
	}
	return "write ${NAME} for a variable and $$ for a literal $"
}

// end marks the remote session gone, saying why.
func (r *Upstream) end(why string) {
	r.endOnce.Do(func() {
		r.why = why
		close(r.endCh)
	})
}

// Transport is go-sdk's, whose connection reaches the session unwrapped
// (its hooks open the standalone GET stream of Streamable HTTP): what
// colibri adds is in the HTTP client below it (RelayBelow, Connected).
func (r *Upstream) Transport() mcp.Transport { return r.conn.Transport() }

// RelayBelow relays the server's progress and logs as its event streams
// are read, in the place of the session's relay over the connection
// (session.RelayBelow).
func (r *Upstream) RelayBelow(f func(method string, params json.RawMessage) bool) {
	r.conn.SetRelay(f)
}

func (r *Upstream) Done() <-chan struct{} { return r.endCh }

func (r *Upstream) EndedWithError() bool { return false }

// ClosedByServer implements session.Lifecycle: a remote session's end is
// Done's.
func (r *Upstream) ClosedByServer() bool { return false }

// NeverRead implements session.Diagnosis: what a remote server read is
// its HTTP status's to say (Diagnose).
func (r *Upstream) NeverRead(context.Context) bool { return false }

func (r *Upstream) DescribeEnd() string {
	select {
	case <-r.endCh:
		return r.why
	default:
	}
	return "is still connected"
}

// Connected is told the session initialize (or server/discover) made: its
// version, and its end, which ends the upstream (the connection failed, or
// colibri closed it).
func (r *Upstream) Connected(cs *mcp.ClientSession) {
	r.connected.Store(true)
	r.conn.SetProtocolVersion(cs.InitializeResult().ProtocolVersion)
	go func() {
		cs.Wait()
		r.end("closed the connection")
	}()
}

func (r *Upstream) BytesRead() int64 { return r.conn.BytesRead() }
func (r *Upstream) Oversize() bool   { return r.conn.TooLarge() }

// Track records the exchanges made under ctx. Before the session is
// connected, ctx is the initialize phase's: once it ends unconnected (the
// phase timed out, the caller left), the Conn closes, and every request
// still in flight with it: go-sdk's Connect waits, before it returns its
// error, for the notifications/cancelled it sends each timed-out request
// (the server/discover probe's, initialize's), 5 s each on a server that
// accepts and never answers, past the phase a user waits for.
func (r *Upstream) Track(ctx context.Context) context.Context {
	ctx, _ = Track(ctx)
	if !r.connected.Load() {
		context.AfterFunc(ctx, func() {
			if !r.connected.Load() {
				r.conn.Close()
			}
		})
	}
	return ctx
}

// ToolError: a JSON-RPC error is the tool's own answer only when it came
// with a success status (an HTTP error status may carry one too, and the
// SDK reports a request that got no answer as one).
func (r *Upstream) ToolError(ctx context.Context) bool {
	x := ExchangeOf(ctx)
	if x == nil {
		return false
	}
	status, _, _ := x.Snapshot()
	return status >= 200 && status < 300
}

func (r *Upstream) Tail() string                          { return "" }
func (r *Upstream) Unstick(context.Context) (stop func()) { return func() {} } // every request ends with its context
func (r *Upstream) CloseConn()                            { r.conn.Close() }
func (r *Upstream) Lowers() bool                          { return false } // go-sdk's HTTP transports
func (r *Upstream) Logger() *slog.Logger                  { return r.log }
func (r *Upstream) Secrets() *redact.Set                  { return r.redact }
func (r *Upstream) PID() int                              { return 0 }

func (r *Upstream) Stop(time.Duration) {
	r.end("was closed by colibri")
	r.conn.Close()
}

func (r *Upstream) Kill() { r.Stop(0) }

// loginNeeded finds, in errs, an error that says a login is required.
func loginNeeded(lr *loginRequired, errs ...error) bool {
	for _, err := range errs {
		if err != nil && errors.As(err, lr) && (*lr).LoginRequired() {
			return true
		}
	}
	return false
}

// loginRequired is what the OAuth package's "run colibri-mcp auth login
// SERVER" error implements.
type loginRequired interface {
	error
	LoginRequired() bool
}

// oauthFailure finds, in errs, a failure of the OAuth exchange (what the
// OAuth package's FailureError and IssuerError implement).
func oauthFailure(found *error, errs ...error) bool {
	var f interface {
		error
		OAuthFailed() bool
	}
	for _, err := range errs {
		if err != nil && errors.As(err, &f) && f.OAuthFailed() {
			*found = f
			return true
		}
	}
	return false
}

// credentialsRefused is what the OAuth package's refusal by a token
// endpoint (a wrong client_secret, a grant the server will not give)
// implements.
type credentialsRefused interface {
	error
	CredentialsRefused() bool
}

// diagnose applies the contract's rules for remote servers (docs/registry.md#error-kinds, "retried"): initialize and tools/list are retried on
// connection errors, 408, 429, 500, 502, 503, 504 and an expired session;
// tools/call only when the request surely never reached the server (not
// written, 429, 503, expired session), or, for a tool that declares
// readOnlyHint or idempotentHint, also on 500, 502, 504 or a connection
// broken after the request was written.
func (r *Upstream) Diagnose(ctx context.Context, e *failure.Error, phase failure.Phase, err error) {
	var status int
	var wrote bool
	var after time.Duration
	netErr := err
	var ctype string
	var notMCP bool
	if x := ExchangeOf(ctx); x != nil {
		status, wrote, after = x.Snapshot()
		ctype, _, notMCP = x.NotMCP()
		if xe := x.Err(); xe != nil {
			// The SDK reports a request that got no answer as a JSON-RPC
			// error ("rejected by transport"); the cause is here.
			netErr = xe
		}
	}
	if status >= 300 {
		e.HTTPStatus = status
	}
	method := phase.Method()
	var lr loginRequired
	var refused credentialsRefused
	var rpcErr *jsonrpc.Error
	var redir *RedirectError
	var failed error
	var challenge string
	switch unclear := r.conn.Unclear(); {
	case unclear != nil:
		// A message two readers could read differently (strict.go): go-sdk
		// was handed none of it, and its connection is failed for good.
		r.end("sent a message that could be read two ways")
		e.Kind, e.Retry.Transient = failure.KindProtocol, false
		e.Err = fmt.Errorf("the server's message during %s, %w", method, unclear)
		if phase == failure.PhaseInitialize {
			e.Kind = failure.KindHandshake
			e.Err = fmt.Errorf("protocol: the server's message during initialize, %w", unclear)
		}
	case loginNeeded(&lr, err, netErr):
		e.Kind = failure.KindUnauthorized
		e.Err = lr.(error) // its message names the command to run
	case errors.As(err, &refused) && refused.CredentialsRefused():
		// The MCP server was never asked (or asked no more): the
		// authorization server refused colibri's OAuth client.
		e.Kind = failure.KindUnauthorized
		e.Err = fmt.Errorf("getting an OAuth token for %s: %w", method, refused)
		e.Hint = "check oauth.client_id, oauth.client_secret and oauth.scopes for this server"
	case oauthFailure(&failed, err, netErr):
		// The OAuth exchange itself failed (a redirect, an unreadable
		// token response, a refused token file, a foreign issuer).
		e.Kind = failure.KindUnauthorized
		e.Err = failed
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = failure.KindUnauthorized
		e.Err = fmt.Errorf("the server refused colibri's credentials during %s (HTTP %d %s)", method, status, http.StatusText(status))
		e.Hint = "check bearer_token, headers or oauth for this server"
	case status == 0 && malformedChallenge(netErr, &challenge):
		// Go's HTTP client refuses a response whose headers hold control
		// characters, before its status is known; a WWW-Authenticate
		// header is a refusal of colibri's credentials all the same.
		e.Kind = failure.KindUnauthorized
		e.Err = fmt.Errorf("the server refused colibri's credentials during %s, with an authentication challenge that holds characters no HTTP header may (shown escaped): WWW-Authenticate: %s", method, challenge)
		e.Hint = "check bearer_token, headers or oauth for this server"
		r.log.Warn("the server refused colibri's credentials with a malformed authentication challenge", "method", method, "challenge", r.redact.Apply(challenge))
	case errors.Is(err, mcp.ErrSessionMissing):
		// "The server MAY terminate the session at any time, after which
		// it MUST respond to requests containing that session ID with
		// HTTP 404 Not Found ... the client MUST start a new session."
		r.end("forgot colibri's session (HTTP 404)")
		e.Kind = failure.KindUnreachable
		e.Err = fmt.Errorf("the server no longer knows colibri's session during %s (HTTP 404)", method)
		e.Retry.Transient, e.Retry.Unsent = true, true
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests ||
		status == http.StatusInternalServerError || status == http.StatusBadGateway ||
		status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout:
		e.Kind = failure.KindUnreachable
		e.Err = fmt.Errorf("the server answered HTTP %d %s to %s", status, http.StatusText(status), method)
		e.Retry.Transient = true
		e.Retry.Unsent = status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
		e.Retry.Idempotent = status != http.StatusRequestTimeout
		e.Retry.After = after
	case notMCP && (status != http.StatusAccepted || phase == failure.PhaseInitialize):
		// A web page, a bare 202 or another body at the url: it is not an
		// MCP endpoint, and asking again will not make it one.
		r.end("answered with something that is not MCP")
		e.Kind = failure.KindUnreachable
		if phase == failure.PhaseInitialize {
			e.Kind = failure.KindHandshake
		}
		if ctype == "" && status == http.StatusAccepted {
			e.Err = fmt.Errorf("the server at %s answered %s with 202 Accepted and no message, not MCP", r.url, method)
		} else {
			if ctype == "" {
				ctype = "none"
			}
			e.Err = fmt.Errorf("the server at %s answered with Content-Type %s, not MCP", r.url, ctype)
		}
		e.Hint = "check the url: it must be the server's MCP endpoint (often ending in /mcp)"
	case errors.As(netErr, &redir):
		e.Kind = failure.KindUnreachable
		if phase == failure.PhaseInitialize {
			e.Kind = failure.KindHandshake
		}
		e.Err = fmt.Errorf("%s: %w", method, redir)
		e.Hint = "if the server has moved, put its new url in the registry"
	case status >= 300:
		// 400, 404 without a session, 405, 406…: the server refuses what
		// colibri sends, and will again.
		e.Kind = failure.KindUnreachable
		if phase == failure.PhaseInitialize {
			e.Kind = failure.KindHandshake
		}
		msg := http.StatusText(status)
		if errors.As(err, &rpcErr) {
			msg = r.redact.Apply(rpcErr.Message)
		}
		e.Err = fmt.Errorf("the server answered HTTP %d to %s: %s", status, method, msg)
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			e.Hint = `check the url; an older server may need "transport": "sse" (or "auto")`
		}
	case isCertError(netErr):
		e.Kind = failure.KindUnreachable
		e.Err = fmt.Errorf("cannot reach the server: %w", netErr)
		e.Hint = "the server's TLS certificate is not trusted"
	case status == 0 && isNetError(netErr):
		e.Kind = failure.KindUnreachable
		if wrote {
			e.Err = fmt.Errorf("the connection broke during %s, after the request was sent: %w", method, netErr)
			e.Retry.Idempotent = true
		} else {
			e.Err = fmt.Errorf("cannot reach the server: %w", netErr)
			e.Retry.Unsent = true
		}
		e.Retry.Transient = true
	case errors.As(err, &rpcErr):
		e.Kind = failure.KindHandshake
		e.Err = fmt.Errorf("%s failed: the server answered error %d: %s", method, rpcErr.Code, r.redact.Apply(rpcErr.Message))
	default:
		// The SDK's connection is gone (a broken stream, a body that is
		// not MCP): the next request needs a new session.
		r.end("broke the connection")
		e.Kind = failure.KindCrashed
		e.Err = fmt.Errorf("the connection to the server broke during %s: %w", method, err)
		e.Retry.Transient = true
		e.Retry.Idempotent = true
	}
	e.Err = redactedErr{e.Err, r.redact}
}

// malformedChallenge finds, in err, Go's refusal of a response whose
// WWW-Authenticate header holds characters no header may (HTTP/1:
// textproto's "malformed MIME header line" quoting the line; HTTP/2: an
// invalid value for "www-authenticate", not quoted), and sets challenge to
// the header's value, control characters escaped, clipped.
func malformedChallenge(err error, challenge *string) bool {
	if err == nil {
		return false
	}
	var pe textproto.ProtocolError
	if errors.As(err, &pe) {
		line, uerr := strconv.Unquote(strings.TrimPrefix(string(pe), "malformed MIME header line: "))
		name, value, _ := strings.Cut(line, ":")
		if uerr != nil || !strings.EqualFold(strings.TrimSpace(name), "WWW-Authenticate") {
			return false
		}
		*challenge = failure.ClipMessage(escapeControls(strings.TrimSpace(value)))
		return true
	}
	if strings.Contains(strings.ToLower(err.Error()), `invalid header field value for "www-authenticate"`) {
		*challenge = "(its value is not passed on over HTTP/2)"
		return true
	}
	return false
}

// escapeControls writes each control character of s (C0, DEL, C1) as
// \xNN, so that a server's words reach no terminal or log as commands.
func escapeControls(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x20 || r >= 0x7f && r < 0xa0 {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// redactedErr shows err with the upstream's secrets redacted, and still
// unwraps to it.
type redactedErr struct {
	err    error
	redact *redact.Set
}

func (e redactedErr) Error() string { return e.redact.Apply(e.err.Error()) }
func (e redactedErr) Unwrap() error { return e.err }

func isCertError(err error) bool {
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	var ci x509.CertificateInvalidError
	var cv *tls.CertificateVerificationError
	return errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &ci) || errors.As(err, &cv)
}

// isNetError reports whether err is a failure of the network (DNS, connect,
// reset, EOF before an answer), as opposed to one of the protocol.
func isNetError(err error) bool {
	var ne interface{ Timeout() bool } // net.Error, *url.Error
	return errors.As(err, &ne)
}
