package mcpregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
)

// DefaultURL is the official MCP Registry; COLIBRI_MCP_REGISTRY_URL or
// --registry-url name another that serves the same API.
const DefaultURL = "https://registry.modelcontextprotocol.io"

// Bounds on what a registry may answer.
const (
	// MaxAnswer is the largest answer read: a server.json is a few
	// kilobytes, a page of search results some hundreds.
	MaxAnswer = 4 << 20
	// searchLimit is how many servers a search asks for.
	searchLimit = 30
	// maxShown is how many names or versions an error lists.
	maxShown = 8
)

// serverName is the schema's ServerDetail.name.
var serverName = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)

// Client reads an MCP Registry's /v0.1 API.
type Client struct {
	// BaseURL is the registry: https://…, or http:// to a loopback
	// address.
	BaseURL string
	// HTTP is the client used; nil means one that follows redirects only
	// to https (or loopback) addresses. The caller's context bounds time.
	HTTP *http.Client
}

// CheckURL says why base cannot be a registry's URL; nil when it can.
func CheckURL(base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("registry URL %q: want https://HOST[/PATH] (no query, no user)", base)
	}
	return checkScheme(u)
}

func checkScheme(u *url.URL) error {
	switch {
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && loopback(u.Hostname()):
		return nil
	}
	return fmt.Errorf("registry URL %s: want https:// (plain http only to a loopback address: the answer decides what colibri runs)", u.Redacted())
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 5 {
			return errors.New("more than 5 redirects")
		}
		return checkScheme(req.URL)
	}}
}

// NotFoundError is a 404 from the registry.
type NotFoundError struct{ URL string }

func (e *NotFoundError) Error() string { return "GET " + e.URL + ": 404 Not Found" }

// Server reads one version of the server name ("" or "latest": the
// registry's latest). A name the registry lacks is an error that names the
// closest names its search finds; a version it lacks names the versions it
// has.
func (c *Client) Server(ctx context.Context, name, version string) (*Found, error) {
	if err := CheckURL(c.BaseURL); err != nil {
		return nil, err
	}
	if !serverName.MatchString(name) || len(name) > 200 {
		return nil, c.unknown(ctx, name, fmt.Errorf("%q is not an MCP Registry server name (NAMESPACE/NAME, io.github.owner/server)", name))
	}
	if version == "" {
		version = "latest"
	}
	var r response
	u := c.endpoint("servers", name, "versions", version)
	err := c.get(ctx, u, &r)
	var nf *NotFoundError
	switch {
	case errors.As(err, &nf):
		if version != "latest" {
			if vs, verr := c.versions(ctx, name); verr == nil && len(vs) > 0 {
				return nil, fmt.Errorf("the MCP Registry at %s has no version %q of %s; it has %s", c.BaseURL, version, name, shortList(vs))
			}
		}
		return nil, c.unknown(ctx, name, fmt.Errorf("the MCP Registry at %s has no server %s (%s)", c.BaseURL, name, u))
	case err != nil:
		return nil, err
	case r.Server == nil:
		return nil, fmt.Errorf("GET %s: the answer is not a server: it has no \"server\"", u)
	case r.Server.Name != name:
		return nil, fmt.Errorf("GET %s: the answer is for %q, not %q", u, clip(r.Server.Name), name)
	case version != "latest" && r.Server.Version != version:
		return nil, fmt.Errorf("GET %s: the answer is version %q, not %q", u, clip(r.Server.Version), version)
	}
	return &Found{Server: *r.Server, Status: r.Meta.Official.Status, Registry: strings.TrimRight(c.BaseURL, "/"), URL: u}, nil
}

// versions lists the versions of name, newest first as the API orders
// them.
func (c *Client) versions(ctx context.Context, name string) ([]string, error) {
	var l list
	if err := c.get(ctx, c.endpoint("servers", name, "versions"), &l); err != nil {
		return nil, err
	}
	var vs []string
	for _, s := range l.Servers {
		if s.Server != nil && s.Server.Version != "" {
			vs = append(vs, clip(s.Server.Version))
		}
	}
	return vs, nil
}

// unknown is err with the closest names the registry's search finds for
// name ("did you mean …"), or a word on running the search when it finds
// none.
func (c *Client) unknown(ctx context.Context, name string, err error) error {
	words := name
	if _, short, ok := strings.Cut(name, "/"); ok {
		words = short
	}
	q := url.Values{"search": {words}, "version": {"latest"}, "limit": {fmt.Sprint(searchLimit)}}
	u := c.endpoint("servers") + "?" + q.Encode()
	var l list
	if serr := c.get(ctx, u, &l); serr != nil {
		return fmt.Errorf("%w; searching for %q failed too: %v", err, words, serr)
	}
	var names []string
	for _, s := range l.Servers {
		if s.Server != nil && serverName.MatchString(s.Server.Name) {
			names = append(names, s.Server.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%w; its search finds nothing for %q", err, words)
	}
	// The closest first, then the search's order.
	if best := suggest.Closest(name, names); best != "" {
		for i, n := range names {
			if n == best {
				names = append([]string{best}, append(names[:i:i], names[i+1:]...)...)
				break
			}
		}
	}
	return fmt.Errorf("%w; did you mean %s?", err, shortList(names))
}

// endpoint is the API path of parts (each escaped: a server name's "/"
// becomes %2F, as the API wants).
func (c *Client) endpoint(parts ...string) string {
	b := strings.TrimRight(c.BaseURL, "/") + "/v0.1"
	for i, p := range parts {
		if i == 0 {
			b += "/" + p
			continue
		}
		b += "/" + url.PathEscape(p)
	}
	return b
}

// get reads u as JSON into v. Each failure names u.
func (c *Client) get(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	switch {
	case err != nil:
		return fmt.Errorf("GET %s: reading the answer: %w", u, err)
	case resp.StatusCode == http.StatusNotFound:
		return &NotFoundError{URL: u}
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: %s%s", u, resp.Status, said(body))
	case len(body) > MaxAnswer:
		return fmt.Errorf("GET %s: the answer is larger than %d bytes", u, MaxAnswer)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("GET %s: %s", u, jsonProblem(err))
	}
	if dec.More() {
		return fmt.Errorf("GET %s: the answer is not one JSON value", u)
	}
	return nil
}

// jsonProblem says where an answer stops being the schema.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := "/" + strings.ReplaceAll(te.Field, ".", "/")
		return fmt.Sprintf("the answer is not the MCP Registry's schema: %s: got %s, want %s", field, te.Value, jsonType(te.Type.Kind().String()))
	case errors.As(err, &se):
		return fmt.Sprintf("the answer is not JSON (at byte %d: %v)", se.Offset, err)
	}
	return "the answer is not JSON: " + err.Error()
}

func jsonType(kind string) string {
	switch kind {
	case "slice":
		return "array"
	case "struct", "map", "ptr":
		return "object"
	case "bool":
		return "boolean"
	}
	return kind
}

// said is what an error answer's body says, on one line and short.
func said(body []byte) string {
	var e struct {
		Error  any    `json:"error"`
		Title  string `json:"title"`
		Detail string `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil {
		switch {
		case e.Detail != "":
			msg = e.Detail
		case e.Title != "":
			msg = e.Title
		case e.Error != nil:
			msg = fmt.Sprint(e.Error)
		}
	}
	if msg = clip(msg); msg == "" {
		return ""
	}
	return ": " + msg
}

// clip is s for a message: one line, printable, at most 200 characters.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return strings.TrimSpace(s)
}

// shortList is names for a message: the first few, and how many more.
func shortList(names []string) string {
	if len(names) > maxShown {
		return strings.Join(names[:maxShown], ", ") + fmt.Sprintf(" (and %d more)", len(names)-maxShown)
	}
	return strings.Join(names, ", ")
}
