package host

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/remote"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// remoteUp is a remote MCP server reached over HTTP (a "url" entry): the
// second kind of upstream. It holds no process slot; it ends when its MCP
// session is gone for good (the server forgot it, or the connection broke)
// or when colibri stops it.
type remoteUp struct {
	conn   *remote.Conn
	url    string // as shown: query values redacted
	log    *slog.Logger
	redact *redactor

	endOnce sync.Once
	endCh   chan struct{}
	why     string // how it ended; valid once endCh is closed
}

var _ upstream = (*remoteUp)(nil)

// newRemote prepares the connection to srv: ${NAME} expanded in its headers
// and bearer token (a missing variable is a config error naming it), its
// OAuth handler made. Nothing is sent yet.
func (h *Host) newRemote(srv *registry.Server) (*remoteUp, error) {
	var secrets []string
	headers, bearer, err := srv.ExpandRemote(func(name string) (string, bool) {
		v, ok := h.getenv(name)
		if ok {
			secrets = append(secrets, v)
		}
		return v, ok
	})
	if err != nil {
		return nil, &Error{Kind: KindConfig, Server: srv.Name, Phase: PhaseSpawn, Err: err, Hint: expandHint(err)}
	}
	if bearer != "" {
		secrets = append(secrets, bearer)
	}
	secrets = append(secrets, srv.URLSecrets()...)
	var oauth auth.OAuthHandler
	if srv.OAuth != nil {
		if h.opts.OAuth == nil {
			return nil, &Error{Kind: KindConfig, Server: srv.Name, Phase: PhaseSpawn,
				Err: errors.New("OAuth is not available in this build of colibri")}
		}
		// The handler's own requests (discovery, tokens) carry none of
		// the entry's headers; refusing private addresses for discovery,
		// unless allow_private_network, is the OAuth package's to do.
		oauth, err = h.opts.OAuth(srv, &http.Client{})
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return nil, e
			}
			return nil, &Error{Kind: KindUnauthorized, Server: srv.Name, Phase: PhaseSpawn, Err: err}
		}
	}
	r := &remoteUp{
		url:    srv.ShownURL(),
		log:    h.log.With("server", srv.Name, "url", srv.ShownURL()),
		redact: newRedactor(secrets),
		endCh:  make(chan struct{}),
	}
	r.conn = remote.New(remote.Options{
		URL: srv.URL, Transport: srv.Transport, Headers: headers, Bearer: bearer,
		OAuth: oauth, MaxBytes: h.opts.MaxResultBytes,
		Timeout: srv.Timeout(h.opts.Timeout), Ended: r.end,
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
		return "set the variable in colibri's environment, or write $$ for a literal $"
	case errors.As(err, &ctl):
		return "the variable's value must be one line: remove the line break or other control character from it in colibri's environment (often a trailing newline from the file it was read from)"
	}
	return "write ${NAME} for a variable and $$ for a literal $"
}

// end marks the remote session gone, saying why.
func (r *remoteUp) end(why string) {
	r.endOnce.Do(func() {
		r.why = why
		close(r.endCh)
	})
}

// transport is go-sdk's, whose connection reaches the session unwrapped
// (its hooks open the standalone GET stream of Streamable HTTP): what
// colibri adds is in the HTTP client below it (relayBelow, connected).
func (r *remoteUp) transport() mcp.Transport { return r.conn.Transport() }

// relayBelow relays the server's progress and logs as its event streams
// are read (internal/remote), in the place of host's relayTransport.
func (r *remoteUp) relayBelow(f func(method string, params json.RawMessage) bool) {
	r.conn.SetRelay(f)
}

func (r *remoteUp) done() <-chan struct{} { return r.endCh }

func (r *remoteUp) ended(d time.Duration) bool { return closedWithin(r.endCh, d) }

func (r *remoteUp) endedWithError() bool { return false }

func (r *remoteUp) describeEnd() string {
	if r.ended(0) {
		return r.why
	}
	return "is still connected"
}

// connected is told the session initialize (or server/discover) made: its
// version, and its end, which ends the upstream (the connection failed, or
// colibri closed it).
func (r *remoteUp) connected(cs *mcp.ClientSession) {
	r.conn.SetProtocolVersion(cs.InitializeResult().ProtocolVersion)
	go func() {
		cs.Wait()
		r.end("closed the connection")
	}()
}

func (r *remoteUp) read() int64    { return r.conn.BytesRead() }
func (r *remoteUp) oversize() bool { return r.conn.TooLarge() }

func (r *remoteUp) track(ctx context.Context) context.Context {
	ctx, _ = remote.Track(ctx)
	return ctx
}

// toolError: a JSON-RPC error is the tool's own answer only when it came
// with a success status (an HTTP error status may carry one too, and the
// SDK reports a request that got no answer as one).
func (r *remoteUp) toolError(ctx context.Context) bool {
	x := remote.ExchangeOf(ctx)
	if x == nil {
		return false
	}
	status, _, _ := x.Snapshot()
	return status >= 200 && status < 300
}

func (r *remoteUp) tail() string                          { return "" }
func (r *remoteUp) unstick(context.Context) (stop func()) { return func() {} } // every request ends with its context
func (r *remoteUp) closeConn()                            { r.conn.Close() }
func (r *remoteUp) lowers() bool                          { return false } // go-sdk's HTTP transports
func (r *remoteUp) logger() *slog.Logger                  { return r.log }
func (r *remoteUp) redactor() *redactor                   { return r.redact }
func (r *remoteUp) procID() int                           { return 0 }
func (r *remoteUp) usesSlot() bool                        { return false }

func (r *remoteUp) stop(time.Duration) {
	r.end("was closed by colibri")
	r.conn.Close()
}

func (r *remoteUp) kill() { r.stop(0) }

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

// diagnose applies the contract's rules for remote servers (CONTRACT.md
// section 4, "Retries"): initialize and tools/list are retried on
// connection errors, 408, 429, 500, 502, 503, 504 and an expired session;
// tools/call only when the request surely never reached the server (not
// written, 429, 503, expired session), or, for a tool that declares
// readOnlyHint or idempotentHint, also on 500, 502, 504 or a connection
// broken after the request was written.
func (r *remoteUp) diagnose(ctx context.Context, e *Error, phase Phase, err error) {
	var status int
	var wrote bool
	var after time.Duration
	netErr := err
	var ctype string
	var notMCP bool
	if x := remote.ExchangeOf(ctx); x != nil {
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
	method := phaseMethod(phase)
	var lr loginRequired
	var refused credentialsRefused
	var rpcErr *jsonrpc.Error
	var redir *remote.RedirectError
	var failed error
	switch {
	case loginNeeded(&lr, err, netErr):
		e.Kind = KindUnauthorized
		e.Err = lr.(error) // its message names the command to run
	case errors.As(err, &refused) && refused.CredentialsRefused():
		// The MCP server was never asked (or asked no more): the
		// authorization server refused colibri's OAuth client.
		e.Kind = KindUnauthorized
		e.Err = fmt.Errorf("getting an OAuth token for %s: %w", method, refused)
		e.Hint = "check oauth.client_id, oauth.client_secret and oauth.scopes for this server"
	case oauthFailure(&failed, err, netErr):
		// The OAuth exchange itself failed (a redirect, an unreadable
		// token response, a refused token file, a foreign issuer).
		e.Kind = KindUnauthorized
		e.Err = failed
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = KindUnauthorized
		e.Err = fmt.Errorf("the server refused colibri's credentials during %s (HTTP %d %s)", method, status, http.StatusText(status))
		e.Hint = "check bearer_token, headers or oauth for this server"
	case errors.Is(err, mcp.ErrSessionMissing):
		// "The server MAY terminate the session at any time, after which
		// it MUST respond to requests containing that session ID with
		// HTTP 404 Not Found ... the client MUST start a new session."
		r.end("forgot colibri's session (HTTP 404)")
		e.Kind = KindUnreachable
		e.Err = fmt.Errorf("the server no longer knows colibri's session during %s (HTTP 404)", method)
		e.transient, e.unsent = true, true
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests ||
		status == http.StatusInternalServerError || status == http.StatusBadGateway ||
		status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout:
		e.Kind = KindUnreachable
		e.Err = fmt.Errorf("the server answered HTTP %d %s to %s", status, http.StatusText(status), method)
		e.transient = true
		e.unsent = status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
		e.idempotentRetry = status != http.StatusRequestTimeout
		e.retryAfter = after
	case notMCP && (status != http.StatusAccepted || phase == PhaseInitialize):
		// A web page, a bare 202 or another body at the url: it is not an
		// MCP endpoint, and asking again will not make it one.
		r.end("answered with something that is not MCP")
		e.Kind = KindUnreachable
		if phase == PhaseInitialize {
			e.Kind = KindHandshake
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
		e.Kind = KindUnreachable
		if phase == PhaseInitialize {
			e.Kind = KindHandshake
		}
		e.Err = fmt.Errorf("%s: %w", method, redir)
		e.Hint = "if the server has moved, put its new url in the registry"
	case status >= 300:
		// 400, 404 without a session, 405, 406…: the server refuses what
		// colibri sends, and will again.
		e.Kind = KindUnreachable
		if phase == PhaseInitialize {
			e.Kind = KindHandshake
		}
		msg := http.StatusText(status)
		if errors.As(err, &rpcErr) {
			msg = r.redact.apply(rpcErr.Message)
		}
		e.Err = fmt.Errorf("the server answered HTTP %d to %s: %s", status, method, msg)
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			e.Hint = `check the url; an older server may need "transport": "sse" (or "auto")`
		}
	case isCertError(netErr):
		e.Kind = KindUnreachable
		e.Err = fmt.Errorf("cannot reach the server: %w", netErr)
		e.Hint = "the server's TLS certificate is not trusted"
	case status == 0 && isNetError(netErr):
		e.Kind = KindUnreachable
		if wrote {
			e.Err = fmt.Errorf("the connection broke during %s, after the request was sent: %w", method, netErr)
			e.idempotentRetry = true
		} else {
			e.Err = fmt.Errorf("cannot reach the server: %w", netErr)
			e.unsent = true
		}
		e.transient = true
	case errors.As(err, &rpcErr):
		e.Kind = KindHandshake
		e.Err = fmt.Errorf("%s failed: the server answered error %d: %s", method, rpcErr.Code, r.redact.apply(rpcErr.Message))
	default:
		// The SDK's connection is gone (a broken stream, a body that is
		// not MCP): the next request needs a new session.
		r.end("broke the connection")
		e.Kind = KindCrashed
		e.Err = fmt.Errorf("the connection to the server broke during %s: %w", method, err)
		e.transient = true
		e.idempotentRetry = true
	}
	e.Err = redactedErr{e.Err, r.redact}
}

// redactedErr shows err with the upstream's secrets redacted, and still
// unwraps to it.
type redactedErr struct {
	err    error
	redact *redactor
}

func (e redactedErr) Error() string { return e.redact.apply(e.err.Error()) }
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
