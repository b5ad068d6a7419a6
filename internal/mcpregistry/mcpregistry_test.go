package mcpregistry_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/mcpregistry"
	"github.com/colibri-mcp/colibri-mcp/internal/mcpregistry/registrytest"
)

const testdata = "../../testdata/mcpregistry"

func plan(t *testing.T, reg *registrytest.Registry, name, version string, c mcpregistry.Choice) (*mcpregistry.Plan, error) {
	t.Helper()
	found, err := (&mcpregistry.Client{BaseURL: reg.URL}).Server(context.Background(), name, version)
	if err != nil {
		return nil, err
	}
	return mcpregistry.PlanFor(found, c)
}

func entryJSON(t *testing.T, p *mcpregistry.Plan) string {
	t.Helper()
	b, err := json.Marshal(p.Entry)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Each published server.json becomes the entry that runs its exact
// version: npm as npx -y PKG@VERSION, PyPI as uvx PKG@VERSION, a remote as
// a url entry; secrets as ${SHORT_NAME} references, never their values;
// a non-secret default written; the source kept.
func TestPlanFromPublishedDocuments(t *testing.T) {
	reg := registrytest.New(t, registrytest.Docs(t, testdata)...)
	for _, tc := range []struct {
		name, server, version string
		choice                mcpregistry.Choice
		want                  string
		set, optional         []string
	}{
		{"npm with a secret, latest", "io.github.brave/brave-search-mcp-server", "", mcpregistry.Choice{},
			`{"command":"npx","args":["-y","@brave/brave-search-mcp-server@2.1.3"],"env":{"BRAVE_API_KEY":"${BRAVE_API_KEY}"},` +
				`"description":"Brave Search MCP Server: web results, images, videos, rich results, AI summaries, and more.",` +
				`"source":{"registry":"` + reg.URL + `","name":"io.github.brave/brave-search-mcp-server","version":"2.1.3"}}`,
			[]string{"BRAVE_API_KEY"}, nil},
		{"npm, an older version exactly", "io.github.brave/brave-search-mcp-server", "2.0.26", mcpregistry.Choice{},
			`{"command":"npx","args":["-y","@brave/brave-search-mcp-server@2.0.26"],"env":{"BRAVE_API_KEY":"${BRAVE_API_KEY}"},` +
				`"description":"Brave Search MCP Server: web results, images, videos, rich results, AI summaries, and more.",` +
				`"source":{"registry":"` + reg.URL + `","name":"io.github.brave/brave-search-mcp-server","version":"2.0.26"}}`,
			[]string{"BRAVE_API_KEY"}, nil},
		{"npm with a required argument and a default", "io.github.modelcontextprotocol/filesystem", "1.0.2",
			mcpregistry.Choice{Args: map[string][]string{"target_dir": {"/srv/a", "/srv/b"}}},
			`{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem@1.0.2","/srv/a","/srv/b"],"env":{"LOG_LEVEL":"info"},` +
				`"description":"Node.js server implementing Model Context Protocol (MCP) for filesystem operations.",` +
				`"source":{"registry":"` + reg.URL + `","name":"io.github.modelcontextprotocol/filesystem","version":"1.0.2"}}`,
			nil, nil},
		{"PyPI with a secret and a default", "io.github.example/weather-mcp", "", mcpregistry.Choice{},
			`{"command":"uvx","args":["weather-mcp-server@0.5.0"],"env":{"WEATHER_API_KEY":"${WEATHER_API_KEY}","WEATHER_UNITS":"celsius"},` +
				`"description":"Python MCP server for weather data access",` +
				`"source":{"registry":"` + reg.URL + `","name":"io.github.example/weather-mcp","version":"0.5.0"}}`,
			[]string{"WEATHER_API_KEY"}, nil},
		{"remote with a secret header", "io.modelcontextprotocol.anonymous/hybrid-mcp", "", mcpregistry.Choice{Package: "remote"},
			`{"url":"https://mcp.anonymous.modelcontextprotocol.io/http","headers":{"X-API-Key":"${HYBRID_X_API_KEY}","X-Region":"us-east-1"},` +
				`"description":"MCP server available as both local package and remote service",` +
				`"source":{"registry":"` + reg.URL + `","name":"io.modelcontextprotocol.anonymous/hybrid-mcp","version":"1.5.0"}}`,
			[]string{"HYBRID_X_API_KEY"}, nil},
		{"npm first, its optional flag left out", "io.modelcontextprotocol.anonymous/hybrid-mcp", "", mcpregistry.Choice{},
			`{"command":"npx","args":["-y","@example/hybrid-mcp-server@1.5.0"],` +
				`"description":"MCP server available as both local package and remote service",` +
				`"source":{"registry":"` + reg.URL + `","name":"io.modelcontextprotocol.anonymous/hybrid-mcp","version":"1.5.0"}}`,
			nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan(t, reg, tc.server, tc.version, tc.choice)
			if err != nil {
				t.Fatal(err)
			}
			if got := entryJSON(t, p); got != tc.want {
				t.Errorf("entry\n got %s\nwant %s", got, tc.want)
			}
			var set []string
			for _, v := range p.Set {
				set = append(set, v.Ref)
			}
			if !slices.Equal(set, tc.set) {
				t.Errorf("set = %v, want %v", set, tc.set)
			}
		})
	}
}

// What colibri cannot run, or would run unsafely, is refused, naming why.
func TestPlanRefuses(t *testing.T) {
	reg := registrytest.New(t, registrytest.Docs(t, testdata)...)
	for _, tc := range []struct {
		name, server string
		choice       mcpregistry.Choice
		want         []string
	}{
		{"OCI", "io.github.example/database-manager", mcpregistry.Choice{}, []string{"OCI image", "docker.io/example/database-manager-mcp:3.1.0", "colibri runs no containers"}},
		{"a required argument missing", "io.github.modelcontextprotocol/filesystem", mcpregistry.Choice{}, []string{"target_dir (Path to access)", "--arg target_dir=VALUE"}},
		{"an argument it does not take", "io.github.brave/brave-search-mcp-server", mcpregistry.Choice{Args: map[string][]string{"port": {"1"}}}, []string{"--arg port", "takes no such argument"}},
		{"no such way", "io.github.brave/brave-search-mcp-server", mcpregistry.Choice{Package: "pypi"}, []string{"offers no pypi way", "it offers npm"}},
		{"a way --package does not know", "io.github.brave/brave-search-mcp-server", mcpregistry.Choice{Package: "nuget"}, []string{`--package "nuget"`, "npm, pypi, remote"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plan(t, reg, tc.server, "", tc.choice)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// A hostile or careless server.json: every field that reaches an argv, an
// environment or a header is checked; a secret's value is never written.
func TestPlanHostileDocuments(t *testing.T) {
	base := func(pkg string) string {
		return `{"name":"io.github.evil/tool","description":"d","version":"1.0.0","packages":[` + pkg + `]}`
	}
	npm := func(extra string) string {
		return base(`{"registryType":"npm","identifier":"evil-tool","version":"1.0.0","transport":{"type":"stdio"}` + extra + `}`)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"a range", base(`{"registryType":"npm","identifier":"evil-tool","version":"^1.0.0","transport":{"type":"stdio"}}`), `version "^1.0.0" is not one exact semver`},
		{"a tag", base(`{"registryType":"npm","identifier":"evil-tool","version":"latest","transport":{"type":"stdio"}}`), `not one exact semver`},
		{"a git spec", base(`{"registryType":"npm","identifier":"git+https://x/y.git","version":"1.0.0","transport":{"type":"stdio"}}`), `not an npm package name`},
		{"a file spec", base(`{"registryType":"npm","identifier":"file:../x","version":"1.0.0","transport":{"type":"stdio"}}`), `not an npm package name`},
		{"an option for a name", base(`{"registryType":"npm","identifier":"--registry=https://evil","version":"1.0.0","transport":{"type":"stdio"}}`), `not an npm package name`},
		{"a PyPI specifier", base(`{"registryType":"pypi","identifier":"tool","version":">=1.0","transport":{"type":"stdio"}}`), `not one exact PEP 440`},
		{"a PyPI URL", base(`{"registryType":"pypi","identifier":"https://evil/x.whl","version":"1.0","transport":{"type":"stdio"}}`), `not a PyPI project name`},
		{"another npm registry", base(`{"registryType":"npm","registryBaseUrl":"https://npm.evil","identifier":"evil-tool","version":"1.0.0","transport":{"type":"stdio"}}`), `registryBaseUrl`},
		{"a transport not stdio", base(`{"registryType":"npm","identifier":"evil-tool","version":"1.0.0","transport":{"type":"streamable-http","url":"http://localhost:1"}}`), `transport/type is "streamable-http"`},
		{"nuget", base(`{"registryType":"nuget","identifier":"Evil","version":"1.0.0","transport":{"type":"stdio"}}`), `not "nuget" packages`},
		{"NODE_OPTIONS", npm(`,"environmentVariables":[{"name":"NODE_OPTIONS","default":"--require /tmp/x.js"}]`), `NODE_OPTIONS changes how the program runs`},
		{"LD_PRELOAD", npm(`,"environmentVariables":[{"name":"LD_PRELOAD","default":"/tmp/x.so"}]`), `LD_PRELOAD changes how`},
		{"npm_config_", npm(`,"environmentVariables":[{"name":"npm_config_registry","default":"https://evil"}]`), `npm_config_registry changes how`},
		{"PATH", npm(`,"environmentVariables":[{"name":"PATH","default":"/tmp"}]`), `PATH changes how`},
		{"a bad variable name", npm(`,"environmentVariables":[{"name":"A=B"}]`), `is not a variable name`},
		{"an option as a value", npm(`,"packageArguments":[{"type":"positional","value":"--inspect=0.0.0.0"}]`), `begins with "-"`},
		{"runtime arguments", npm(`,"runtimeArguments":[{"type":"named","name":"--node-options","value":"x"}]`), `--accept-runtime-args`},
		{"no way to run", `{"name":"io.github.evil/tool","description":"d","version":"1.0.0"}`, `neither /server/packages nor /server/remotes`},
		{"a version range for the server", `{"name":"io.github.evil/tool","description":"d","version":"^1","packages":[]}`, `/server/version "^1" is not one exact version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := registrytest.New(t, []byte(tc.doc))
			_, err := plan(t, reg, "io.github.evil/tool", "", mcpregistry.Choice{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}

	// A secret's literal value or default is never written: the name
	// becomes a reference.
	reg := registrytest.New(t, []byte(npm(`,"environmentVariables":[{"name":"API_TOKEN","value":"sk-live-123","isSecret":true},{"name":"DB_PASSWORD","default":"hunter2"},{"name":"MODE","default":"${HOME}"}]`)))
	p, err := plan(t, reg, "io.github.evil/tool", "", mcpregistry.Choice{})
	if err != nil {
		t.Fatal(err)
	}
	got := entryJSON(t, p)
	if strings.Contains(got, "sk-live-123") || strings.Contains(got, "hunter2") {
		t.Fatalf("a secret written: %s", got)
	}
	if !strings.Contains(got, `"API_TOKEN":"${TOOL_API_TOKEN}"`) || !strings.Contains(got, `"MODE":"$${HOME}"`) {
		t.Errorf("entry %s: want API_TOKEN as ${TOOL_API_TOKEN} and $ doubled in a default", got)
	}
	if !slices.ContainsFunc(p.Optional, func(v mcpregistry.Var) bool { return v.Name == "DB_PASSWORD" }) {
		t.Errorf("optional = %+v: want DB_PASSWORD (secret-looking, not required) left out", p.Optional)
	}
}

// A remote's URL template takes its variables from --arg; a header's
// {variable} that is secret becomes a reference inside the value.
func TestPlanRemoteTemplates(t *testing.T) {
	doc := `{"name":"io.github.acme/tenant-mcp","description":"d","version":"2.0.0","remotes":[{"type":"streamable-http",
		"url":"https://{tenant_id}.api.example.com/mcp","variables":{"tenant_id":{"isRequired":true}},
		"headers":[{"name":"Authorization","value":"Bearer {api_key}","variables":{"api_key":{"isRequired":true,"isSecret":true}}}]}]}`
	reg := registrytest.New(t, []byte(doc))
	if _, err := plan(t, reg, "io.github.acme/tenant-mcp", "", mcpregistry.Choice{}); err == nil || !strings.Contains(err.Error(), "--arg tenant_id=VALUE") {
		t.Fatalf("err = %v, want --arg tenant_id=VALUE", err)
	}
	p, err := plan(t, reg, "io.github.acme/tenant-mcp", "", mcpregistry.Choice{Args: map[string][]string{"tenant_id": {"blue"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := entryJSON(t, p), `{"url":"https://blue.api.example.com/mcp","headers":{"Authorization":"Bearer ${TENANT_API_KEY}"}`; !strings.HasPrefix(got, want) {
		t.Errorf("entry %s\nwant it to begin %s", got, want)
	}
}

// Every failure of the registry is an error naming the URL: 404 (with the
// closest names from its search, or the versions it has), 500, an answer
// that is not JSON or not the schema, a closed port.
func TestClientFailures(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.New(t, registrytest.Docs(t, testdata)...)
	c := &mcpregistry.Client{BaseURL: reg.URL}

	_, err := c.Server(ctx, "io.github.brave/brave-search", "")
	if err == nil || !strings.Contains(err.Error(), reg.URL+"/v0.1/servers/io.github.brave%2Fbrave-search/versions/latest") ||
		!strings.Contains(err.Error(), "did you mean io.github.brave/brave-search-mcp-server") {
		t.Errorf("unknown name: %v", err)
	}
	_, err = c.Server(ctx, "io.github.brave/brave-search-mcp-server", "9.9.9")
	if err == nil || !strings.Contains(err.Error(), `no version "9.9.9"`) || !strings.Contains(err.Error(), "2.1.3, 2.0.26") {
		t.Errorf("unknown version: %v", err)
	}
	_, err = c.Server(ctx, "weather", "")
	if err == nil || !strings.Contains(err.Error(), "not an MCP Registry server name") || !strings.Contains(err.Error(), "io.github.example/weather-mcp") {
		t.Errorf("a bare word: %v", err)
	}

	for _, tc := range []struct {
		name string
		fail func(w http.ResponseWriter, r *http.Request)
		want string
	}{
		{"500", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			w.Write([]byte(`{"title":"Internal Server Error","status":500,"detail":"database down"}`))
		}, "500 Internal Server Error: database down"},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>maintenance</html>")) }, "the answer is not JSON"},
		{"not the schema", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"server":{"name":"io.github.brave/brave-search-mcp-server","version":2}}`))
		}, "/server/version: got number, want string"},
		{"no server", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"servers":[]}`)) }, `has no "server"`},
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"server":{"description":"`))
			w.Write([]byte(strings.Repeat("x", mcpregistry.MaxAnswer)))
			w.Write([]byte(`"}}`))
		}, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg.Fail(tc.fail)
			_, err := c.Server(ctx, "io.github.brave/brave-search-mcp-server", "")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), reg.URL+"/v0.1/servers/") {
				t.Fatalf("err = %v, want it to name the URL and say %q", err, tc.want)
			}
		})
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	_, err = (&mcpregistry.Client{BaseURL: closed}).Server(ctx, "io.github.brave/brave-search-mcp-server", "")
	var ne *net.OpError
	if err == nil || !strings.Contains(err.Error(), closed+"/v0.1/servers/") || !errors.As(err, &ne) {
		t.Fatalf("closed port: %v", err)
	}

	for _, bad := range []string{"http://registry.example.com", "ftp://x", "https://user:pw@x", "not a url"} {
		if err := mcpregistry.CheckURL(bad); err == nil {
			t.Errorf("CheckURL(%q) = nil", bad)
		}
	}
}

// The grammar of names and versions, by table.
func TestGrammar(t *testing.T) {
	for _, s := range []string{"1.0.0", "0.6.2", "1.0.0-beta.1", "2.1.3+build.5"} {
		if !mcpregistry.SemVer(s) {
			t.Errorf("SemVer(%q) = false", s)
		}
	}
	for _, s := range []string{"^1.0.0", "~1.2.3", ">=1", "1.x", "1.*", "latest", "v1.0.0", "1.0", "01.0.0", "1.0.0 || 2.0.0", "-1.0.0"} {
		if mcpregistry.SemVer(s) {
			t.Errorf("SemVer(%q) = true", s)
		}
	}
	for _, s := range []string{"1.0", "0.5.0", "2.0b1", "1.0.post1", "1.0.dev3", "1!2.0", "1.0rc2"} {
		if !mcpregistry.PEP440(s) {
			t.Errorf("PEP440(%q) = false", s)
		}
	}
	for _, s := range []string{">=1.0", "==1.0", "1.0+local", "1.0.*", "~=1.0", "latest", "-1.0", "v1.0"} {
		if mcpregistry.PEP440(s) {
			t.Errorf("PEP440(%q) = true", s)
		}
	}
	for _, s := range []string{"@brave/brave-search-mcp-server", "snyk", "a.b_c-d"} {
		if !mcpregistry.NPMName(s) {
			t.Errorf("NPMName(%q) = false", s)
		}
	}
	for _, s := range []string{"-y", "--registry=x", "Upper", "git+https://x", "file:x", "a/b", "@s/", "http://x/y.tgz", "../x"} {
		if mcpregistry.NPMName(s) {
			t.Errorf("NPMName(%q) = true", s)
		}
	}
	for _, s := range []string{"-e", "--index-url", ".x", "x.", "a b", "x==1"} {
		if mcpregistry.PyPIName(s) {
			t.Errorf("PyPIName(%q) = true", s)
		}
	}
	for _, s := range []string{"PATH", "NODE_OPTIONS", "LD_PRELOAD", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONSTARTUP", "BASH_ENV", "ENV", "npm_config_registry", "NPM_CONFIG_PREFIX", "UV_INDEX_URL", "DYLD_INSERT_LIBRARIES"} {
		if !mcpregistry.RunsDifferently(s) {
			t.Errorf("RunsDifferently(%q) = false", s)
		}
	}
	for _, s := range []string{"BRAVE_API_KEY", "LOG_LEVEL", "ENVIRONMENT", "PATHNAME"} {
		if mcpregistry.RunsDifferently(s) {
			t.Errorf("RunsDifferently(%q) = true", s)
		}
	}
}
