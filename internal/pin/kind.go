package pin

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is what a pin is of: a server's tools, prompts, resource templates,
// resources (only with the registry's "pin_resources"), or its
// instructions (docs/security.md, pinned tool definitions).
type Kind string

// The kinds pinned, in the order colibri shows them.
const (
	KindTool         Kind = "tool"
	KindPrompt       Kind = "prompt"
	KindTemplate     Kind = "template"
	KindResource     Kind = "resource"
	KindInstructions Kind = "instructions"
)

// Kinds are every kind, in the order colibri shows them.
var Kinds = []Kind{KindTool, KindPrompt, KindTemplate, KindResource, KindInstructions}

// InstructionsName is the name the server's instructions are pinned and
// judged under (a Verdict's key, a Selector's Name).
const InstructionsName = "instructions"

// What changed in a prompt, template, resource or the instructions, beside
// the tools' WhatTitle, WhatDescription and WhatNew.
const (
	WhatArguments    = "arguments"
	WhatName         = "name"
	WhatMIMEType     = "mimeType"
	WhatInstructions = "instructions"
)

// kindFields are, for each kind, the members of its canonical definition
// other than its key, in the order a change's "what" lists them.
var kindFields = map[Kind][]struct{ key, what string }{
	KindTool:         fields,
	KindPrompt:       {{"title", WhatTitle}, {"description", WhatDescription}, {"arguments", WhatArguments}},
	KindTemplate:     {{"name", WhatName}, {"title", WhatTitle}, {"description", WhatDescription}, {"mimeType", WhatMIMEType}},
	KindResource:     {{"name", WhatName}, {"title", WhatTitle}, {"description", WhatDescription}, {"mimeType", WhatMIMEType}},
	KindInstructions: {{"instructions", WhatInstructions}},
}

// keyField is the member a kind's definitions are matched by.
var keyField = map[Kind]string{
	KindTool:         "name",
	KindPrompt:       "name",
	KindTemplate:     "uriTemplate",
	KindResource:     "uri",
	KindInstructions: "",
}

// Instructions is a server's instructions (its initialize result's
// "instructions"), as CheckInstructions takes them.
type Instructions struct{ Text string }

// CanonicalPrompt is a prompt's canonical definition: its name, title,
// description and arguments (each argument's name, title, description and
// required), keys sorted, absent members left out; never _meta or icons.
func CanonicalPrompt(p *mcp.Prompt) ([]byte, error) {
	m := map[string]any{"name": p.Name}
	text(m, "title", p.Title)
	text(m, "description", p.Description)
	if len(p.Arguments) > 0 {
		args := make([]any, 0, len(p.Arguments))
		for _, a := range p.Arguments {
			if a == nil {
				continue
			}
			am := map[string]any{"name": a.Name}
			text(am, "title", a.Title)
			text(am, "description", a.Description)
			if a.Required {
				am["required"] = true
			}
			args = append(args, am)
		}
		m["arguments"] = args
	}
	return json.Marshal(m)
}

// CanonicalTemplate is a resource template's canonical definition: its
// uriTemplate, name, title, description and mimeType.
func CanonicalTemplate(t *mcp.ResourceTemplate) ([]byte, error) {
	m := map[string]any{"uriTemplate": t.URITemplate}
	text(m, "name", t.Name)
	text(m, "title", t.Title)
	text(m, "description", t.Description)
	text(m, "mimeType", t.MIMEType)
	return json.Marshal(m)
}

// CanonicalResource is a resource's canonical definition: its uri, name,
// title, description and mimeType (not its size or annotations, which
// change with the content).
func CanonicalResource(r *mcp.Resource) ([]byte, error) {
	m := map[string]any{"uri": r.URI}
	text(m, "name", r.Name)
	text(m, "title", r.Title)
	text(m, "description", r.Description)
	text(m, "mimeType", r.MIMEType)
	return json.Marshal(m)
}

// CanonicalInstructions is a server's instructions as a definition:
// {"instructions": TEXT} (an absent text is "").
func CanonicalInstructions(text string) ([]byte, error) {
	return json.Marshal(map[string]any{"instructions": text})
}

func text(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

// Selector names what `pins diff` and `pins accept` take: a Kind and a name
// (a tool's or prompt's name, a template's uriTemplate, a resource's uri,
// InstructionsName), or, with Kind "", a name of any kind.
type Selector struct {
	Kind Kind
	Name string
}

// ParseSelector reads `tool:NAME`, `prompt:NAME`, `template:URITEMPLATE`,
// `resource:URI` or `instructions`; anything else is a bare name, which
// matches every kind ("file:///x" is a bare name: "file" is no kind).
func ParseSelector(s string) Selector {
	if s == string(KindInstructions) {
		return Selector{Name: InstructionsName}
	}
	if k, name, ok := strings.Cut(s, ":"); ok {
		switch Kind(k) {
		case KindTool, KindPrompt, KindTemplate, KindResource:
			return Selector{Kind: Kind(k), Name: name}
		case KindInstructions:
			if name == "" || name == InstructionsName {
				return Selector{Kind: KindInstructions, Name: InstructionsName}
			}
		}
	}
	return Selector{Name: s}
}

// String is the selector as `pins accept` takes it: KIND:NAME, or the bare
// name.
func (s Selector) String() string {
	switch s.Kind {
	case "":
		return s.Name
	case KindInstructions:
		return string(KindInstructions)
	}
	return string(s.Kind) + ":" + s.Name
}

// matches reports whether s takes the definition name of kind k.
func (s Selector) matches(k Kind, name string) bool {
	return (s.Kind == "" || s.Kind == k) && s.Name == name
}

// selected reports whether any of sel takes name of kind k (all do when
// sel is empty).
func selected(sel []Selector, k Kind, name string) bool {
	return len(sel) == 0 || slices.ContainsFunc(sel, func(s Selector) bool { return s.matches(k, name) })
}

// Taken is one definition Accept took: its kind and name.
type Taken = Selector

// describeTaken says, for a person, what Accept took: each as KIND:NAME.
func describeTaken(taken []Taken) string {
	parts := make([]string, len(taken))
	for i, t := range taken {
		parts[i] = t.String()
	}
	return strings.Join(parts, ", ")
}
