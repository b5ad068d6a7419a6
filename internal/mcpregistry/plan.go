package mcpregistry

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/registry/regfile"
)

// The ways of running a server that --package chooses among.
const (
	KindNPM    = "npm"
	KindPyPI   = "pypi"
	KindRemote = "remote"
)

// Kinds are --package's values, in the order tried without it.
var Kinds = []string{KindNPM, KindPyPI, KindRemote}

// Choice is what the person said beside the server's name.
type Choice struct {
	// Package is KindNPM, KindPyPI or KindRemote; "" tries them in that
	// order.
	Package string
	// Args are --arg NAME=VALUE: the values of packageArguments (by
	// valueHint or flag, with or without its dashes) and of the
	// {variables} in values and remote URLs, by name, in order.
	Args map[string][]string
	// AcceptRuntimeArgs lets runtimeArguments (options of npx or uvx
	// themselves) into the entry.
	AcceptRuntimeArgs bool
}

// Var is a variable or header the entry reads from colibri's environment
// (Ref, set where colibri runs), or one it left out.
type Var struct {
	Name        string // the server's name for it
	Ref         string // the variable colibri reads ("" when left out)
	Header      bool
	Secret      bool
	Description string
}

// Plan is the entry add writes and what it says about it.
type Plan struct {
	Entry *regfile.Entry
	Kind  string
	// What tells which package or remote was chosen: "npm
	// @scope/pkg@1.2.3", "remote https://…".
	What string
	// Set are the variables to set where colibri runs; Optional those the
	// server may read that the entry leaves out.
	Set, Optional []Var
	// OptionalArgs are arguments the server takes that were not given.
	OptionalArgs []string
	// Runtime are the runtime arguments written (with AcceptRuntimeArgs).
	Runtime []string
	// Notes are what else the registry said (a deprecated release).
	Notes []string
}

// PlanFor turns the server f into an entry that runs exactly its version in
// the way c chooses. An error says which field of the answer, or which
// missing --arg, stops it; nothing is written then.
func PlanFor(f *Found, c Choice) (*Plan, error) {
	srv := &f.Server
	if !serverVersion.MatchString(srv.Version) || srv.Version == "latest" || strings.ContainsAny(srv.Version, "^~<>=*| ") {
		return nil, fmt.Errorf("%s: /server/version %q is not one exact version", f.URL, clip(srv.Version))
	}
	if f.Status == "deleted" {
		return nil, fmt.Errorf("%s@%s is deleted from the MCP Registry at %s: choose another version", srv.Name, srv.Version, f.Registry)
	}
	if len(srv.Packages) == 0 && len(srv.Remotes) == 0 {
		return nil, fmt.Errorf("%s: the server has neither /server/packages nor /server/remotes: nothing to run", f.URL)
	}
	if c.Package != "" && !slices.Contains(Kinds, c.Package) {
		return nil, fmt.Errorf("--package %q: want one of %s", c.Package, strings.Join(Kinds, ", "))
	}
	b := &builder{f: f, c: c, short: shortName(srv.Name), used: map[string]bool{}}
	p, err := b.choose()
	if err != nil {
		return nil, err
	}
	if err := b.unusedArgs(); err != nil {
		return nil, err
	}
	p.Entry.Source = &registry.Source{Registry: f.Registry, Name: srv.Name, Version: srv.Version}
	if d := clip(srv.Description); d != "" {
		p.Entry.Description = d
	}
	if f.Status == "deprecated" {
		p.Notes = append(p.Notes, fmt.Sprintf("the MCP Registry marks %s@%s deprecated", srv.Name, srv.Version))
	}
	return p, nil
}

type builder struct {
	f     *Found
	c     Choice
	short string
	used  map[string]bool // the --arg names read
	plan  Plan
}

// choose picks the package or remote to run: c.Package's first, or the
// first in the order npm, PyPI, remote whose transport colibri speaks.
// When nothing fits, the error says why for each that was offered.
func (b *builder) choose() (*Plan, error) {
	srv := &b.f.Server
	var offered []string
	for _, pkg := range srv.Packages {
		offered = append(offered, clip(pkg.RegistryType))
	}
	if len(srv.Remotes) > 0 {
		offered = append(offered, KindRemote)
	}
	kinds := Kinds
	if b.c.Package != "" {
		kinds = []string{b.c.Package}
	}
	var first error
	for _, kind := range kinds {
		if kind == KindRemote {
			if len(srv.Remotes) > 0 {
				return b.remote(0)
			}
			continue
		}
		for i, pkg := range srv.Packages {
			if pkg.RegistryType != kind {
				continue
			}
			if b.c.Package == "" && (pkg.Transport == nil || pkg.Transport.Type != "stdio") && first == nil {
				// Not one colibri runs: the next kind may be.
				_, first = b.pkg(i)
				b.plan = Plan{}
				continue
			}
			return b.pkg(i)
		}
	}
	if b.c.Package != "" {
		return nil, fmt.Errorf("%s@%s offers no %s way to run it (--package): it offers %s", srv.Name, srv.Version, b.c.Package, strings.Join(offered, ", "))
	}
	if first != nil {
		return nil, first
	}
	// Nothing of a kind colibri runs: the first refusal says why.
	for i := range srv.Packages {
		if _, err := b.pkg(i); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s@%s offers nothing colibri can run", srv.Name, srv.Version)
}

// pkg plans the package at index i.
func (b *builder) pkg(i int) (*Plan, error) {
	pkg := &b.f.Server.Packages[i]
	at := fmt.Sprintf("/server/packages/%d", i)
	var cmd string
	var spec []string
	switch pkg.RegistryType {
	case KindNPM:
		if !NPMName(pkg.Identifier) {
			return nil, fmt.Errorf("%s: %s/identifier %q is not an npm package name", b.f.URL, at, clip(pkg.Identifier))
		}
		if !SemVer(pkg.Version) {
			return nil, fmt.Errorf("%s: %s/version %q is not one exact semver version (no range, tag or URL)", b.f.URL, at, clip(pkg.Version))
		}
		if u := strings.TrimRight(pkg.RegistryBaseURL, "/"); u != "" && u != "https://registry.npmjs.org" {
			return nil, fmt.Errorf("%s: %s/registryBaseUrl is %q: colibri writes npx for packages of https://registry.npmjs.org only (npx would fetch another package of that name there)", b.f.URL, at, clip(u))
		}
		cmd, spec = "npx", []string{"-y"}
	case KindPyPI:
		if !PyPIName(pkg.Identifier) {
			return nil, fmt.Errorf("%s: %s/identifier %q is not a PyPI project name", b.f.URL, at, clip(pkg.Identifier))
		}
		if !PEP440(pkg.Version) {
			return nil, fmt.Errorf("%s: %s/version %q is not one exact PEP 440 version (no specifier, URL or local part)", b.f.URL, at, clip(pkg.Version))
		}
		if u := strings.TrimRight(pkg.RegistryBaseURL, "/"); u != "" && u != "https://pypi.org" {
			return nil, fmt.Errorf("%s: %s/registryBaseUrl is %q: colibri writes uvx for packages of https://pypi.org only", b.f.URL, at, clip(u))
		}
		cmd = "uvx"
	case "oci":
		return nil, fmt.Errorf("%s@%s is an OCI image (%s), and colibri runs no containers; it offers no npm or PyPI package or remote that colibri runs instead. If you trust the image, add it as a command: colibri-mcp add NAME -- docker run -i --rm IMAGE",
			b.f.Server.Name, b.f.Server.Version, clip(pkg.Identifier))
	default:
		return nil, fmt.Errorf("%s: %s/registryType %q: colibri runs npm and PyPI packages and remotes, not %q packages", b.f.URL, at, clip(pkg.RegistryType), clip(pkg.RegistryType))
	}
	if pkg.Transport == nil || pkg.Transport.Type != "stdio" {
		t := "none"
		if pkg.Transport != nil {
			t = clip(pkg.Transport.Type)
		}
		return nil, fmt.Errorf("%s: %s/transport/type is %q: colibri runs a package over stdio only (a remote is added with --package remote)", b.f.URL, at, t)
	}
	e := &regfile.Entry{Command: cmd}
	if len(pkg.RuntimeArguments) > 0 {
		rt, err := b.args(at+"/runtimeArguments", pkg.RuntimeArguments)
		if err != nil {
			return nil, err
		}
		if !b.c.AcceptRuntimeArgs {
			return nil, fmt.Errorf("%s@%s asks for options of %s itself (runtimeArguments): %q; these change how %s runs, not the server: look at them, then add --accept-runtime-args to write them",
				b.f.Server.Name, b.f.Server.Version, cmd, rt, cmd)
		}
		if h := pkg.RuntimeHint; h != "" && h != cmd {
			return nil, fmt.Errorf("%s: %s/runtimeArguments are for %q, and colibri runs %s", b.f.URL, at, clip(h), cmd)
		}
		b.plan.Runtime = rt
		spec = append(spec, rt...)
	}
	spec = append(spec, pkg.Identifier+"@"+pkg.Version)
	args, err := b.args(at+"/packageArguments", pkg.PackageArguments)
	if err != nil {
		return nil, err
	}
	e.Args = append(spec, args...)
	for j, v := range pkg.EnvironmentVariables {
		if !envName.MatchString(v.Name) {
			return nil, fmt.Errorf("%s: %s/environmentVariables/%d/name %q is not a variable name", b.f.URL, at, j, clip(v.Name))
		}
		if RunsDifferently(v.Name) {
			return nil, fmt.Errorf("%s: %s/environmentVariables/%d: %s changes how the program runs, not what it does: colibri writes no such variable from a registry (set it in the entry yourself if you mean it)", b.f.URL, at, j, v.Name)
		}
		val, ok, err := b.value(fmt.Sprintf("%s/environmentVariables/%d", at, j), v.Name, false, v.Input)
		if err != nil {
			return nil, err
		}
		if ok {
			if e.Env == nil {
				e.Env = map[string]string{}
			}
			e.Env[v.Name] = val
		}
	}
	b.plan.Entry, b.plan.Kind = e, pkg.RegistryType
	b.plan.What = pkg.RegistryType + " " + pkg.Identifier + "@" + pkg.Version
	return &b.plan, nil
}

// remote plans the remote at index i.
func (b *builder) remote(i int) (*Plan, error) {
	r := &b.f.Server.Remotes[i]
	at := fmt.Sprintf("/server/remotes/%d", i)
	e := &regfile.Entry{}
	switch r.Type {
	case "streamable-http":
	case "sse":
		e.Transport = registry.TransportSSE
	default:
		return nil, fmt.Errorf("%s: %s/type %q: colibri connects to streamable-http and sse remotes only", b.f.URL, at, clip(r.Type))
	}
	raw, err := b.fill(at+"/url", r.URL, r.Variables)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) {
		return nil, fmt.Errorf("%s: %s/url %q: want an https:// URL", b.f.URL, at, clip(raw))
	}
	e.URL = u.String()
	for j, h := range r.Headers {
		if !headerName.MatchString(h.Name) {
			return nil, fmt.Errorf("%s: %s/headers/%d/name %q is not a header name", b.f.URL, at, j, clip(h.Name))
		}
		switch strings.ToLower(h.Name) {
		case "host", "content-length", "content-type", "transfer-encoding", "connection", "upgrade", "te", "trailer", "accept",
			"mcp-session-id", "mcp-protocol-version", "last-event-id", "cookie", "proxy-authorization":
			return nil, fmt.Errorf("%s: %s/headers/%d: colibri sets %s itself; a registry may not", b.f.URL, at, j, h.Name)
		}
		val, ok, err := b.value(fmt.Sprintf("%s/headers/%d", at, j), h.Name, true, h.Input)
		if err != nil {
			return nil, err
		}
		if ok {
			if e.Headers == nil {
				e.Headers = map[string]string{}
			}
			e.Headers[h.Name] = val
		}
	}
	b.plan.Entry, b.plan.Kind, b.plan.What = e, KindRemote, "remote "+e.URL
	return &b.plan, nil
}

// ref is the variable colibri reads for the server's variable name: the
// server's short name before it (GITHUB_API_KEY for github's API_KEY), so
// that two servers' API_KEY do not collide, unless it begins with that
// already.
func (b *builder) ref(name string) string {
	v := editorconf.VarName(name)
	first, _, _ := strings.Cut(b.short, "_")
	if v == b.short || strings.HasPrefix(v, b.short+"_") || first != "" && strings.HasPrefix(v, first+"_") {
		return v
	}
	return editorconf.VarName(b.short, name)
}

// shortName is a registry server's short name for its variables: the part
// after the "/", without the words "mcp" and "server" (brave-search-mcp-server
// is BRAVE_SEARCH), upper case.
func shortName(name string) string {
	_, short, _ := strings.Cut(name, "/")
	var words []string
	for _, w := range strings.FieldsFunc(short, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		if lw := strings.ToLower(w); lw != "mcp" && lw != "server" && lw != "io" {
			words = append(words, w)
		}
	}
	if len(words) == 0 {
		words = []string{short}
	}
	return editorconf.VarName(strings.Join(words, "_"))
}

// value is what the entry writes for the variable or header name: a
// non-secret value or default as it is ($ doubled, since the registry
// expands ${NAME}), a ${REF} for a secret or a required value without one
// (listed in Set), nothing for an optional one without one (listed in
// Optional). A secret's value or default is never written.
func (b *builder) value(at, name string, header bool, in Input) (string, bool, error) {
	secret := in.IsSecret || editorconf.SecretName(name)
	v := Var{Name: name, Header: header, Secret: secret, Description: clip(in.Description)}
	literal := in.Value
	if literal == "" {
		literal = in.Default
	}
	switch {
	case !secret && literal != "" && len(in.Variables) == 0:
		if err := plain(at, literal); err != nil {
			return "", false, fmt.Errorf("%s: %w", b.f.URL, err)
		}
		return strings.ReplaceAll(literal, "$", "$$"), true, nil
	case !secret && in.Value != "":
		// A template: its {variables} become references or defaults.
		out, err := b.template(at, in.Value, in.Variables)
		return out, err == nil, err
	case secret && in.Value != "" && len(in.Variables) > 0:
		out, err := b.template(at, in.Value, in.Variables)
		return out, err == nil, err
	case secret && in.Value != "", in.IsRequired:
		v.Ref = b.ref(name)
		b.plan.Set = append(b.plan.Set, v)
		return "${" + v.Ref + "}", true, nil
	}
	b.plan.Optional = append(b.plan.Optional, v)
	return "", false, nil
}

var placeholder = regexp.MustCompile(`\{([A-Za-z0-9_.-]+)\}`)

// template is a header's or variable's value with each {variable} a
// ${REF} (a secret, or one with no default) or its default.
func (b *builder) template(at, value string, vars map[string]Input) (string, error) {
	if err := plain(at, value); err != nil {
		return "", fmt.Errorf("%s: %w", b.f.URL, err)
	}
	var err error
	out := placeholder.ReplaceAllStringFunc(strings.ReplaceAll(value, "$", "$$"), func(m string) string {
		name := m[1 : len(m)-1]
		in, ok := vars[name]
		if !ok {
			return m // left as it is, as the schema says
		}
		if !in.IsSecret && !editorconf.SecretName(name) && in.Default != "" {
			if perr := plain(at+"/variables/"+name, in.Default); perr != nil && err == nil {
				err = fmt.Errorf("%s: %w", b.f.URL, perr)
			}
			return strings.ReplaceAll(in.Default, "$", "$$")
		}
		v := Var{Name: name, Ref: b.ref(name), Secret: in.IsSecret || editorconf.SecretName(name), Description: clip(in.Description)}
		if !slices.ContainsFunc(b.plan.Set, func(s Var) bool { return s.Ref == v.Ref }) {
			b.plan.Set = append(b.plan.Set, v)
		}
		return "${" + v.Ref + "}"
	})
	return out, err
}

// fill is a value with its {variables} from --arg or their defaults (an
// argv or a URL takes no ${NAME}); a required one missing is an error.
func (b *builder) fill(at, value string, vars map[string]Input) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(value, func(m string) string {
		name := m[1 : len(m)-1]
		in, ok := vars[name]
		if !ok {
			return m
		}
		if given, ok := b.c.Args[name]; ok && len(given) > 0 {
			b.used[name] = true
			return given[0]
		}
		if !in.IsSecret && in.Default != "" {
			return in.Default
		}
		missing = append(missing, name)
		return m
	})
	if len(missing) > 0 {
		return "", &MissingArgsError{Names: missing, At: at}
	}
	return out, plain(at, out)
}

// MissingArgsError names the --arg values a server needs and was not
// given.
type MissingArgsError struct {
	Names []string
	At    string
	// About is what the server.json says of each, where it says
	// something: what to give is never a guess.
	About map[string]string
}

func (e *MissingArgsError) Error() string {
	var flags, names []string
	for _, n := range e.Names {
		flags = append(flags, "--arg "+n+"=VALUE")
		if d := e.About[n]; d != "" {
			n += " (" + d + ")"
		}
		names = append(names, n)
	}
	return fmt.Sprintf("the server needs %s, at %s: give %s", strings.Join(names, ", "), e.At, strings.Join(flags, " "))
}

// args is the argv of packageArguments or runtimeArguments: fixed values
// as they are, the others from --arg. A default is the program's own, not
// written: a required argument without a fixed value needs --arg (the
// published defaults are examples: /Users/username/Desktop), an optional
// one is left out and listed.
func (b *builder) args(at string, list []Argument) ([]string, error) {
	var argv, missing []string
	var about map[string]string // a missing one's description
	for i, a := range list {
		where := fmt.Sprintf("%s/%d", at, i)
		var key string
		switch a.Type {
		case "positional":
			key = a.ValueHint
		case "named":
			if !flagName.MatchString(a.Name) {
				return nil, fmt.Errorf("%s: %s/name %q is not a flag (-x, --name)", b.f.URL, where, clip(a.Name))
			}
			key = a.Name
		default:
			return nil, fmt.Errorf("%s: %s/type %q: want positional or named", b.f.URL, where, clip(a.Type))
		}
		vals, given := b.given(key)
		switch {
		case given && a.IsSecret:
			return nil, fmt.Errorf("the argument %s is secret, and colibri writes no secret into args (every process list shows them): set it in the entry's env instead, if the server reads one", key)
		case given:
			if len(vals) > 1 && !a.IsRepeated {
				return nil, fmt.Errorf("--arg %s is given %d times; the server takes it once", key, len(vals))
			}
		case a.Value != "":
			v, err := b.fill(where+"/value", a.Value, a.Variables)
			if err != nil {
				var me *MissingArgsError
				if errors.As(err, &me) {
					missing = append(missing, me.Names...)
					continue
				}
				return nil, err
			}
			if strings.HasPrefix(v, "-") {
				return nil, fmt.Errorf("%s: %s/value %q begins with \"-\": a value from a registry is never an option", b.f.URL, where, clip(v))
			}
			vals = []string{v}
		case a.IsRequired:
			if key == "" {
				return nil, fmt.Errorf("%s: %s: a required argument with no value and no valueHint to give it by", b.f.URL, where)
			}
			name := strings.TrimLeft(key, "-")
			missing = append(missing, name)
			if d := clip(a.Description); d != "" {
				if about == nil {
					about = map[string]string{}
				}
				about[name] = d
			}
			continue
		default:
			if key != "" {
				b.plan.OptionalArgs = append(b.plan.OptionalArgs, strings.TrimLeft(key, "-"))
			}
			continue
		}
		for _, v := range vals {
			if a.Type == "named" {
				argv = append(argv, a.Name)
			}
			argv = append(argv, v)
		}
	}
	if len(missing) > 0 {
		return nil, &MissingArgsError{Names: missing, At: at, About: about}
	}
	return argv, nil
}

// given is the --arg values for key, a flag's with or without its dashes.
func (b *builder) given(key string) ([]string, bool) {
	if key == "" {
		return nil, false
	}
	for _, k := range []string{key, strings.TrimLeft(key, "-")} {
		if v, ok := b.c.Args[k]; ok {
			b.used[k] = true
			return v, true
		}
	}
	return nil, false
}

// unusedArgs refuses an --arg the chosen way of running takes nowhere.
func (b *builder) unusedArgs() error {
	for _, k := range slices.Sorted(maps.Keys(b.c.Args)) {
		if !b.used[k] {
			known := b.plan.OptionalArgs
			if len(known) == 0 {
				return fmt.Errorf("--arg %s: %s@%s (%s) takes no such argument", k, b.f.Server.Name, b.f.Server.Version, b.plan.What)
			}
			return fmt.Errorf("--arg %s: %s@%s (%s) takes no such argument; it takes %s", k, b.f.Server.Name, b.f.Server.Version, b.plan.What, strings.Join(known, ", "))
		}
	}
	return nil
}

// plain refuses a value with control characters: it would reach an argv,
// a header or a variable.
func plain(at, v string) error {
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%s holds a control character", at)
		}
	}
	return nil
}
