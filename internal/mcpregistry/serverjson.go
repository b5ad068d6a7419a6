// Package mcpregistry reads a server's server.json from an MCP Registry (the
// official registry's stable /v0.1 API, server.json schema 2025-12-11) and
// turns one way of running it into a registry entry that runs that exact
// version, for colibri-mcp add --from-registry (docs/registry.md, "From the
// MCP Registry").
//
//	c := &mcpregistry.Client{BaseURL: mcpregistry.DefaultURL}
//	found, err := c.Server(ctx, "io.github.brave/brave-search-mcp-server", "")
//	plan, err := mcpregistry.PlanFor(found, mcpregistry.Choice{})
//	// plan.Entry is what add writes; plan.Set, plan.Optional what it says.
//
// Everything the registry answers is data, never options: a package name
// must fit npm's or PyPI's grammar, a version must be exact, nothing may
// begin with "-", and variables that change how a program runs are refused.
package mcpregistry

// ServerJSON is the part of a server.json that colibri reads (the schema's
// ServerDetail); the rest (icons, repository, _meta) is not needed to run
// it.
type ServerJSON struct {
	Name        string    `json:"name"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Version     string    `json:"version"`
	Packages    []Package `json:"packages"`
	Remotes     []Remote  `json:"remotes"`
}

// Package is one way to run the server from a package registry.
type Package struct {
	RegistryType         string     `json:"registryType"`
	RegistryBaseURL      string     `json:"registryBaseUrl"`
	Identifier           string     `json:"identifier"`
	Version              string     `json:"version"`
	RuntimeHint          string     `json:"runtimeHint"`
	Transport            *Remote    `json:"transport"`
	RuntimeArguments     []Argument `json:"runtimeArguments"`
	PackageArguments     []Argument `json:"packageArguments"`
	EnvironmentVariables []KeyValue `json:"environmentVariables"`
}

// Remote is a transport: a package's (stdio, or one it serves over HTTP)
// or a remote server's (streamable-http or sse, with a URL and headers).
type Remote struct {
	Type      string           `json:"type"`
	URL       string           `json:"url"`
	Headers   []KeyValue       `json:"headers"`
	Variables map[string]Input `json:"variables"`
}

// Input is a value the person running the server may have to give.
type Input struct {
	Description string           `json:"description"`
	IsRequired  bool             `json:"isRequired"`
	IsSecret    bool             `json:"isSecret"`
	Format      string           `json:"format"`
	Value       string           `json:"value"`
	Default     string           `json:"default"`
	Placeholder string           `json:"placeholder"`
	Choices     []string         `json:"choices"`
	Variables   map[string]Input `json:"variables"`
}

// KeyValue is an environment variable or a header.
type KeyValue struct {
	Name string `json:"name"`
	Input
}

// Argument is a packageArguments or runtimeArguments item: "positional"
// (identified by ValueHint) or "named" (Name, the flag with its dashes).
type Argument struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	ValueHint  string `json:"valueHint"`
	IsRepeated bool   `json:"isRepeated"`
	Input
}

// Found is one server version as the registry answered it.
type Found struct {
	Server ServerJSON
	// Status is the registry's lifecycle status (active, deprecated,
	// deleted); "" when it said none.
	Status string
	// Registry is the registry's base URL, URL the address that answered.
	Registry, URL string
}

// response is the API's ServerResponse: the server.json and the registry's
// own metadata beside it.
type response struct {
	Server *ServerJSON `json:"server"`
	Meta   struct {
		Official struct {
			Status   string `json:"status"`
			IsLatest bool   `json:"isLatest"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

// list is the API's ServerList.
type list struct {
	Servers []response `json:"servers"`
}
