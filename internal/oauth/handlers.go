package oauth

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/colibri-mcp/colibri-mcp/registry"
)

// Handlers keeps one handler per server entry, so that a client_credentials
// token outlives the connection that fetched it (a per_request server would
// otherwise fetch one for every request). An edited entry (url or oauth)
// gets a new handler. The zero value is not ready: use [NewHandlers].
type Handlers struct {
	opts Options
	mu   sync.Mutex
	byID map[string]handlerEntry
}

type handlerEntry struct {
	key string
	h   auth.OAuthHandler
}

// NewHandlers returns an empty set of handlers made with opts.
func NewHandlers(opts Options) *Handlers {
	return &Handlers{opts: opts, byID: map[string]handlerEntry{}}
}

// Handler is [Handler] for srv, made once per entry. hc is used by the first
// call for an entry; the authorization server is the same for later ones.
func (c *Handlers) Handler(srv *registry.Server, hc *http.Client) (auth.OAuthHandler, error) {
	raw, _ := json.Marshal(struct {
		URL     string
		OAuth   *registry.OAuth
		Private bool
	}{srv.URL, srv.OAuth, srv.AllowPrivateNetwork})
	key := string(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[srv.Name]; ok && e.key == key {
		return e.h, nil
	}
	h, err := Handler(srv, hc, c.opts)
	if err != nil {
		return nil, err
	}
	c.byID[srv.Name] = handlerEntry{key: key, h: h}
	return h, nil
}
