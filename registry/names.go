package registry

import (
	"fmt"
	"regexp"
	"slices"
)

// The schema restricts the member names of four objects with propertyNames:
// server names, env keys, header names and policy callers. jsonschema/v6
// (v6.0.3, validator.go) reports a propertyNames failure with the
// validator's location slice itself, not a copy, and validating a later
// sibling overwrites it: the same file was reported at
// /servers/demo/policy/callers/token:ABC one time and at
// /servers/demo/command/callers/token:ABC another. So the registry checks
// these names itself, with the schema's own patterns, and drops the
// library's propertyNames problems (schema.Options.SkipNames).

// namePatterns are the schema's propertyNames patterns, by the schema path
// of the object whose members they name.
var namePatterns = func() map[string]*regexp.Regexp {
	m := map[string]*regexp.Regexp{}
	for _, at := range [][]string{
		{"properties", "servers"},
		{"$defs", "server", "properties", "env"},
		{"$defs", "server", "properties", "headers"},
		{"$defs", "policy", "properties", "callers"},
	} {
		var node any = schemaDoc
		for _, k := range at {
			node = node.(map[string]any)[k]
		}
		pattern := node.(map[string]any)["propertyNames"].(map[string]any)["pattern"].(string)
		m[at[len(at)-1]] = regexp.MustCompile(pattern)
	}
	return m
}()

// nameProblems checks the member names that the schema's propertyNames
// restrict, in doc (the registry as decoded for the schema), each at its
// own JSON location.
func nameProblems(doc any) []Problem {
	var ps []Problem
	check := func(at string, obj any, rule string) {
		m, ok := obj.(map[string]any)
		if !ok {
			return
		}
		re := namePatterns[rule]
		for _, name := range sortedKeys(m) {
			if !re.MatchString(name) {
				ps = append(ps, Problem{Location: at + "/" + escapePointer(name),
					Message: fmt.Sprintf("the name %q is not allowed: '%s' does not match pattern '%s'", name, name, re)})
			}
		}
	}
	callers := func(at string, pol any) {
		if p, ok := pol.(map[string]any); ok {
			check(at+"/callers", p["callers"], "callers")
		}
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	callers("/policy", root["policy"])
	servers, _ := root["servers"].(map[string]any)
	check("/servers", servers, "servers")
	for _, name := range sortedKeys(servers) {
		srv, ok := servers[name].(map[string]any)
		if !ok {
			continue
		}
		at := "/servers/" + escapePointer(name)
		check(at+"/env", srv["env"], "env")
		check(at+"/headers", srv["headers"], "headers")
		callers(at+"/policy", srv["policy"])
	}
	return ps
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
