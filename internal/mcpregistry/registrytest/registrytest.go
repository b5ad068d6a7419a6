// Package registrytest is a fake MCP Registry for tests: the official
// registry's /v0.1 reads (a server's version, its versions, the search),
// over loopback, serving the real server.json documents of
// testdata/mcpregistry or any a test gives it. For tests only.
//
//	reg := registrytest.New(t, registrytest.Docs(t, "../../testdata/mcpregistry")...)
//	// reg.URL is the --registry-url.
package registrytest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Registry is the fake registry.
type Registry struct {
	URL string

	mu       sync.Mutex
	versions map[string][]json.RawMessage // by name, in publish order: the last is the latest
	fail     func(w http.ResponseWriter, r *http.Request)
	requests []string
}

// Docs reads every *.json of dir.
func Docs(t testing.TB, dir string) [][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no server.json documents in %s: %v", dir, err)
	}
	slices.Sort(paths) // brave-search-2.0.26 before 2.1.3: published in that order
	var docs [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b)
	}
	return docs
}

// New starts the registry serving docs (published in that order), closed
// when the test ends.
func New(t testing.TB, docs ...[]byte) *Registry {
	t.Helper()
	r := &Registry{versions: map[string][]json.RawMessage{}}
	for _, d := range docs {
		r.Add(t, d)
	}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Add publishes doc, a server.json, as its server's latest version.
func (r *Registry) Add(t testing.TB, doc []byte) {
	t.Helper()
	var s struct{ Name string }
	if err := json.Unmarshal(doc, &s); err != nil || s.Name == "" {
		t.Fatalf("not a server.json: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.versions[s.Name] = append(r.versions[s.Name], doc)
}

// Fail makes every answer f's from now on (a 500, a body that is not JSON).
func (r *Registry) Fail(f func(w http.ResponseWriter, r *http.Request)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = f
}

// Requests are the paths and queries asked, in order.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, req.URL.RequestURI())
	if r.fail != nil {
		r.fail(w, req)
		return
	}
	if req.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rest, ok := strings.CutPrefix(req.URL.EscapedPath(), "/v0.1/servers")
	if !ok {
		notFound(w)
		return
	}
	if rest == "" {
		r.search(w, req.URL.Query())
		return
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	if len(parts) < 2 || parts[1] != "versions" || len(parts) > 3 {
		notFound(w)
		return
	}
	name, err := url.PathUnescape(parts[0])
	if err != nil {
		notFound(w)
		return
	}
	vs := r.versions[name]
	if len(vs) == 0 {
		notFound(w)
		return
	}
	if len(parts) == 2 {
		var list []any
		for i := len(vs) - 1; i >= 0; i-- {
			list = append(list, wrap(vs[i], i == len(vs)-1))
		}
		answer(w, map[string]any{"servers": list, "metadata": map[string]any{"count": len(list)}})
		return
	}
	version, _ := url.PathUnescape(parts[2])
	for i, v := range vs {
		var s struct{ Version string }
		_ = json.Unmarshal(v, &s)
		latest := i == len(vs)-1
		if s.Version == version || version == "latest" && latest {
			answer(w, wrap(v, latest))
			return
		}
	}
	notFound(w)
}

// search answers ?search= (a substring of the name), the latest of each.
func (r *Registry) search(w http.ResponseWriter, q url.Values) {
	var list []any
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range r.versions {
			if !yield(n) {
				return
			}
		}
	}) {
		if s := q.Get("search"); s != "" && !strings.Contains(strings.ToLower(name), strings.ToLower(s)) {
			continue
		}
		vs := r.versions[name]
		list = append(list, wrap(vs[len(vs)-1], true))
	}
	if list == nil {
		list = []any{}
	}
	answer(w, map[string]any{"servers": list, "metadata": map[string]any{"count": len(list)}})
}

// wrap is doc as the API's ServerResponse.
func wrap(doc json.RawMessage, latest bool) map[string]any {
	return map[string]any{"server": doc, "_meta": map[string]any{
		"io.modelcontextprotocol.registry/official": map[string]any{
			"status": "active", "publishedAt": "2025-12-11T10:30:00Z", "updatedAt": "2025-12-11T10:30:00Z", "isLatest": latest,
		},
	}}
}

func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte(`{"title":"Not Found","status":404,"detail":"Server not found"}`))
}
