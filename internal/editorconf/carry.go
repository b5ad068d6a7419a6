package editorconf

// What editors now carry beside the command: VS Code's per-server sandbox
// ("sandboxEnabled" and "sandbox": filesystem and network allowlists, as
// Anthropic's sandbox-runtime reads them) and Claude Code's "oauth" keys of
// a remote server. What has a counterpart in the registry becomes it; what
// has none is noted by name, never dropped silently.

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Sandbox is the registry's "sandbox" as import writes it: Net is false,
// or a list of destinations where the registry takes one
// (Options.NetList), or nil (the default: the network).
type Sandbox struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	Net   any      `json:"net,omitempty"`
	Unix  []string `json:"unix,omitempty"`
}

// OAuth is the registry's "oauth" as import writes it.
type OAuth struct {
	Grant    string   `json:"grant"`
	ClientID string   `json:"client_id,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
}

// sandboxSpec is VS Code's sandbox block, read.
type sandboxSpec struct {
	write, unix, domains []string
}

// oauthSpec is Claude Code's oauth block, read.
type oauthSpec struct {
	clientID string
	scopes   []string
}

// readVSCodeSandbox reads "sandboxEnabled" and "sandbox" into s; a block
// VS Code does not apply (sandboxEnabled not true) is noted, not imported.
func (c *converter) readVSCodeSandbox(name string, o object, s *spec) error {
	enabled, _, err := o.boolean("sandboxEnabled")
	if err != nil {
		return err
	}
	n, has := o.get("sandbox")
	switch {
	case !enabled && has:
		c.note(name, "\"sandbox\" not imported: \"sandboxEnabled\" is not true, so the editor does not apply it")
		return nil
	case !enabled:
		return nil
	}
	sb := &sandboxSpec{}
	s.sandbox = sb
	if !has {
		return nil // no writes, no network: sandbox-runtime's defaults
	}
	block, err := n.object()
	if err != nil {
		return err
	}
	if fs, ok := block.get("filesystem"); ok {
		fo, err := fs.object()
		if err != nil {
			return err
		}
		if sb.write, err = fo.strings("allowWrite"); err != nil {
			return err
		}
		c.dropped(name, "sandbox.filesystem", fo, []string{"allowWrite"}, map[string]string{
			"denyRead":  "colibri's sandbox grants reads, it does not deny them within a grant: leave the folder out of \"read\"",
			"denyWrite": "colibri's sandbox grants writes, it does not deny them within a grant: narrow \"write\" instead",
		})
	}
	if nw, ok := block.get("network"); ok {
		no, err := nw.object()
		if err != nil {
			return err
		}
		if sb.domains, err = no.strings("allowedDomains"); err != nil {
			return err
		}
		if sb.unix, err = no.strings("allowUnixSockets"); err != nil {
			return err
		}
		c.dropped(name, "sandbox.network", no, []string{"allowedDomains", "allowUnixSockets"}, map[string]string{
			"deniedDomains":     "colibri's sandbox lists the destinations a server may reach, none it may not",
			"allowLocalBinding": "colibri's sandbox has no setting for listening on local ports",
		})
	}
	c.dropped(name, "sandbox", block, []string{"filesystem", "network"}, nil)
	return nil
}

// readClaudeOAuth reads Claude Code's "oauth" ({clientId, scopes,
// callbackPort, authServerMetadataUrl}) into s.
func (c *converter) readClaudeOAuth(name string, o object, s *spec) error {
	n, ok := o.get("oauth")
	if !ok {
		return nil
	}
	block, err := n.object()
	if err != nil {
		return err
	}
	oa := &oauthSpec{}
	if oa.clientID, err = block.str("clientId"); err != nil {
		return err
	}
	if sc, ok := block.get("scopes"); ok {
		switch v := sc.v.(type) {
		case string: // Claude Code's: one space-separated string
			oa.scopes = strings.Fields(v)
		default:
			if oa.scopes, err = sc.strings(); err != nil {
				return err
			}
		}
	}
	s.oauth = oa
	c.dropped(name, "oauth", block, []string{"clientId", "scopes"}, map[string]string{
		"callbackPort":          "colibri-mcp auth login redirects to a loopback port of its own (docs/oauth.md); a client registered for a fixed port must allow colibri's",
		"authServerMetadataUrl": "colibri discovers the authorization server from the server itself (RFC 9728); \"issuer\" in its oauth pins which one it may use",
		"clientSecret":          "a secret stays out of the registry: give the entry's oauth a \"client_secret\": \"${NAME}\" with the client_credentials grant if that is what it uses",
	})
	return nil
}

// dropped notes each key of o outside read, by its full name, with why
// when known.
func (c *converter) dropped(server, prefix string, o object, read []string, why map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(o.m)) {
		if slices.Contains(read, k) {
			continue
		}
		msg := fmt.Sprintf("%s.%s not carried over", prefix, k)
		if w := why[k]; w != "" {
			msg += ": " + w
		} else {
			msg += ": colibri's registry has no such setting"
		}
		c.note(server, msg)
	}
}

// sandbox turns VS Code's sandbox into the registry's: allowWrite as
// write, allowUnixSockets as unix, allowedDomains as net's destinations
// where the registry takes a list, and no network when it is empty (as in
// VS Code). What reads mean differs: noted.
func (c *converter) sandbox(e *Entry, sb *sandboxSpec) {
	if c.opts.NoSandbox != "" {
		c.note(e.Name, "sandbox not imported: "+c.opts.NoSandbox)
		return
	}
	out := &Sandbox{}
	for i, p := range sb.write {
		p, _ = c.translate(e.Name, p, where{key: fmt.Sprintf("sandbox/filesystem/allowWrite/%d", i)})
		out.Write = append(out.Write, p)
	}
	for i, p := range sb.unix {
		p, _ = c.translate(e.Name, p, where{key: fmt.Sprintf("sandbox/network/allowUnixSockets/%d", i)})
		out.Unix = append(out.Unix, p)
	}
	switch {
	case len(sb.domains) == 0:
		out.Net = false
	case c.opts.NetList:
		out.Net = slices.Clone(sb.domains)
	default:
		out.Net = false
		c.note(e.Name, fmt.Sprintf("sandbox.network.allowedDomains (%s) not carried over: this colibri's sandbox allows the network whole or not at all, so the entry has none; \"net\": true in its sandbox lets it reach every address",
			strings.Join(sb.domains, ", ")))
	}
	c.note(e.Name, "sandbox imported: VS Code lets a sandboxed server read every file but denyRead's; colibri's lets it read only the system's files, its command's and what \"read\" grants: add the folders it reads to \"read\" (colibri-mcp check --probe shows what fails)")
	e.Sandbox = out
}

// oauth turns Claude Code's oauth into the registry's authorization_code
// grant (colibri-mcp auth login, once).
func (c *converter) oauth(e *Entry, oa *oauthSpec) {
	if e.BearerToken != "" || slices.ContainsFunc(slices.Collect(maps.Keys(e.Headers)), func(h string) bool { return strings.EqualFold(h, "Authorization") }) {
		c.note(e.Name, "oauth not carried over: the entry sends its own Authorization already")
		return
	}
	e.OAuth = &OAuth{Grant: "authorization_code", ClientID: oa.clientID, Scopes: oa.scopes}
	c.note(e.Name, fmt.Sprintf("oauth imported: run 'colibri-mcp auth login %s' once to sign in (docs/oauth.md)", e.Name))
}
