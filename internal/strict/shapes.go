package strict

import (
	"strings"
)

// shape is what MCP's schema says of a value: the keys it defines for an
// object (each with the shape of its value), the shape of an array's
// elements, or of every value of a map (values), or a kind of scalar. A nil
// *shape is a value whose keys MCP does not define (arguments, _meta,
// schemas, structuredContent, experimental): below it only keys twice and
// bad strings are refused, never a key's case.
type shape struct {
	fields map[string]*shape
	elem   *shape
	names  []string // fields' keys, for the case-insensitive search
}

// Scalar kinds, compared by identity.
var (
	plain      = &shape{}
	integer    = &shape{} // an integer within ±(2^53−1), or a string (ids, tokens)
	safeNumber = &shape{} // a number within ±(2^53−1), fraction allowed (progress)
	text       = &shape{} // a hosted server's content text: repaired, not refused
	skip       = &shape{} // not read here at all (a caller's tools/call arguments)
)

// obj is an object shape with the given fields.
func obj(fields map[string]*shape) *shape {
	s := &shape{fields: fields}
	for k := range fields {
		s.names = append(s.names, k)
	}
	return s
}

func list(elem *shape) *shape { return &shape{elem: elem} }

// variantOf finds the field of s that key differs from only in case (as
// Go's encoding/json folds it: Unicode simple folding, so "ſ" is "s" and
// "K" (Kelvin) is "k"), or by a NUL and what follows it.
func (s *shape) variantOf(key string) (string, bool) {
	cut := key
	if i := strings.IndexByte(key, 0); i >= 0 {
		cut = key[:i]
	}
	for _, f := range s.names {
		if f != key && (strings.EqualFold(f, key) || strings.EqualFold(f, cut)) {
			return f, true
		}
	}
	return "", false
}

// The objects MCP's schema (2025-11-25 and 2026-07-28) defines, by the
// names of their fields.
var (
	meta        *shape // _meta: any keys
	annotations = obj(map[string]*shape{"audience": list(plain), "priority": plain, "lastModified": plain})
	icon        = obj(map[string]*shape{"src": plain, "mimeType": plain, "sizes": list(plain), "theme": plain})
	icons       = list(icon)

	resourceContents = obj(map[string]*shape{"uri": plain, "mimeType": plain, "text": text, "blob": plain, "_meta": meta})
	content          = obj(map[string]*shape{
		"type": plain, "text": text, "data": plain, "mimeType": plain, "annotations": annotations, "_meta": meta,
		"uri": plain, "name": plain, "title": plain, "description": plain, "size": integer, "icons": icons,
		"resource": resourceContents,
		// sampling's tool use and results (2025-11-25)
		"id": plain, "input": nil, "toolUseId": plain, "content": nil, "structuredContent": nil, "isError": plain,
	})

	toolAnnotations = obj(map[string]*shape{
		"title": plain, "readOnlyHint": plain, "destructiveHint": plain, "idempotentHint": plain, "openWorldHint": plain,
	})
	tool = obj(map[string]*shape{
		"name": plain, "title": plain, "description": plain, "inputSchema": nil, "outputSchema": nil,
		"annotations": toolAnnotations, "icons": icons, "_meta": meta,
		"execution": obj(map[string]*shape{"taskSupport": plain}),
	})
	promptArgument = obj(map[string]*shape{"name": plain, "title": plain, "description": plain, "required": plain})
	prompt         = obj(map[string]*shape{
		"name": plain, "title": plain, "description": plain, "arguments": list(promptArgument), "icons": icons, "_meta": meta,
	})
	resource = obj(map[string]*shape{
		"uri": plain, "name": plain, "title": plain, "description": plain, "mimeType": plain, "size": integer,
		"annotations": annotations, "icons": icons, "_meta": meta,
	})
	resourceTemplate = obj(map[string]*shape{
		"uriTemplate": plain, "name": plain, "title": plain, "description": plain, "mimeType": plain,
		"annotations": annotations, "icons": icons, "_meta": meta,
	})
	promptMessage = obj(map[string]*shape{"role": plain, "content": content})
	// sampling's messages may carry one content or a list of them.
	samplingMessage = obj(map[string]*shape{"role": plain, "content": contentOrList, "_meta": meta})
	contentOrList   = &shape{fields: content.fields, names: content.names, elem: content}
	resultContent   = list(content)

	implementation = obj(map[string]*shape{
		"name": plain, "title": plain, "version": plain, "description": plain, "websiteUrl": plain, "icons": icons,
	})
	// Capabilities: each member is an object of flags MCP names, or one
	// colibri passes on as it is (experimental, extensions).
	capabilities = obj(map[string]*shape{
		"experimental": nil, "extensions": nil,
		"roots":    obj(map[string]*shape{"listChanged": plain}),
		"sampling": nil, "elicitation": nil, "tasks": nil, "completions": nil, "logging": nil,
		"prompts":   obj(map[string]*shape{"listChanged": plain}),
		"resources": obj(map[string]*shape{"subscribe": plain, "listChanged": plain}),
		"tools":     obj(map[string]*shape{"listChanged": plain}),
	})

	// resultShape is every result MCP defines, as one object: a response
	// does not say which request it answers, and a key that differs only
	// in case from any of these is as ambiguous whichever it answers.
	resultShape = obj(map[string]*shape{
		"_meta": meta, "nextCursor": plain, "ttlMs": integer, "cacheScope": plain, "resultType": plain,
		// initialize, server/discover
		"protocolVersion": plain, "capabilities": capabilities, "serverInfo": implementation, "instructions": plain,
		"supportedVersions": list(plain),
		// lists
		"tools": list(tool), "prompts": list(prompt), "resources": list(resource), "resourceTemplates": list(resourceTemplate),
		"roots": list(obj(map[string]*shape{"uri": plain, "name": plain, "_meta": meta})),
		// tools/call: a list of content. (An object is a caller's answer:
		// sampling's one content, or an elicitation's form values, whose
		// keys are the form's own, "Title" or "Type" as much as any.)
		"content": resultContent, "structuredContent": nil, "isError": plain,
		// prompts/get, resources/read
		"description": plain, "messages": list(promptMessage), "contents": list(resourceContents),
		// completion/complete
		"completion": obj(map[string]*shape{"values": list(plain), "total": integer, "hasMore": plain}),
		// sampling, elicitation (a caller's answers)
		"role": plain, "model": plain, "stopReason": plain, "action": plain,
		// 2026-07-28 multi-round-trip requests
		"inputRequests": nil, "requestState": plain,
		// tasks
		"task": nil,
	})
	errorShape = obj(map[string]*shape{"code": integer, "message": plain, "data": nil})

	// paramsShape is the params of a method this table does not list.
	paramsShape = obj(map[string]*shape{"_meta": requestMeta})
	// A request's _meta: its keys are anyone's (docs/protocol.md: never
	// case-checked inside _meta; go-sdk and the TypeScript SDK both read
	// progressToken from it exactly), but a progress token is an integer
	// or a string. (No names: no key of it is a case variant.)
	requestMeta = &shape{fields: map[string]*shape{"progressToken": integer}}
)

// params is an object shape of a request's params: its fields, and _meta.
func params(fields map[string]*shape) *shape {
	fields["_meta"] = requestMeta
	return obj(fields)
}

var cursorParams = params(map[string]*shape{"cursor": plain})

// methods is each request's and notification's params, by method.
var methods = map[string]*shape{
	"initialize": params(map[string]*shape{
		"protocolVersion": plain, "capabilities": capabilities, "clientInfo": implementation,
	}),
	"ping":                     params(map[string]*shape{}),
	"server/discover":          params(map[string]*shape{}),
	"tools/list":               cursorParams,
	"prompts/list":             cursorParams,
	"resources/list":           cursorParams,
	"resources/templates/list": cursorParams,
	"tools/call": params(map[string]*shape{
		"name": plain, "arguments": nil, "task": nil, "inputResponses": nil, "requestState": plain,
	}),
	"prompts/get": params(map[string]*shape{
		"name": plain, "arguments": nil, "inputResponses": nil, "requestState": plain,
	}),
	"resources/read":        params(map[string]*shape{"uri": plain, "inputResponses": nil, "requestState": plain}),
	"resources/subscribe":   params(map[string]*shape{"uri": plain}),
	"resources/unsubscribe": params(map[string]*shape{"uri": plain}),
	"completion/complete": params(map[string]*shape{
		"ref":      obj(map[string]*shape{"type": plain, "name": plain, "uri": plain}),
		"argument": obj(map[string]*shape{"name": plain, "value": plain}),
		"context":  obj(map[string]*shape{"arguments": nil}),
	}),
	"logging/setLevel": params(map[string]*shape{"level": plain}),
	"sampling/createMessage": params(map[string]*shape{
		"messages": list(samplingMessage), "modelPreferences": nil, "systemPrompt": plain, "includeContext": plain,
		"temperature": plain, "maxTokens": integer, "stopSequences": list(plain), "metadata": nil,
		"tools": list(tool), "toolChoice": nil, "task": nil,
	}),
	"elicitation/create": params(map[string]*shape{
		"message": plain, "requestedSchema": nil, "mode": plain, "url": plain, "elicitationId": plain, "task": nil,
	}),
	"roots/list":                           params(map[string]*shape{}),
	"subscriptions/listen":                 params(map[string]*shape{"notifications": nil}),
	"notifications/initialized":            params(map[string]*shape{}),
	"notifications/cancelled":              params(map[string]*shape{"requestId": integer, "reason": plain}),
	"notifications/progress":               params(map[string]*shape{"progressToken": integer, "progress": safeNumber, "total": safeNumber, "message": plain}),
	"notifications/message":                params(map[string]*shape{"level": plain, "logger": plain, "data": nil}),
	"notifications/roots/list_changed":     params(map[string]*shape{}),
	"notifications/tools/list_changed":     params(map[string]*shape{}),
	"notifications/prompts/list_changed":   params(map[string]*shape{}),
	"notifications/resources/list_changed": params(map[string]*shape{}),
	"notifications/resources/updated":      params(map[string]*shape{"uri": plain}),
	"notifications/elicitation/complete":   params(map[string]*shape{"elicitationId": plain}),
}

// callerCall is tools/call from a caller: the arguments are the call's own
// check's (tools/input answers invalid_arguments naming the location, as
// MCP asks of input errors).
var callerCall = func() *shape {
	s := methods["tools/call"]
	fields := make(map[string]*shape, len(s.fields))
	for k, v := range s.fields {
		fields[k] = v
	}
	fields["arguments"] = skip
	return obj(fields)
}()

// requestParams is the shape of a request's params by its method (nil: a
// method MCP does not define; only _meta is known then).
func requestParams(method string, side Side) *shape {
	if method == "tools/call" && side == FromCaller {
		return callerCall
	}
	return methods[method]
}

// envelopes is the top-level object's shape for each params shape.
var envelopes = func() map[*shape]*shape {
	m := make(map[*shape]*shape, len(methods)+2)
	for _, p := range append([]*shape{paramsShape, callerCall}, mapValues(methods)...) {
		m[p] = obj(map[string]*shape{
			"jsonrpc": plain, "id": integer, "method": plain,
			"params": p, "result": resultShape, "error": errorShape,
		})
	}
	return m
}()

func mapValues(m map[string]*shape) []*shape {
	out := make([]*shape, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// envelopeOf is the shape of a message whose params are p (nil: a method
// MCP does not define, or a response).
func envelopeOf(p *shape) *shape {
	if p == nil {
		p = paramsShape
	}
	return envelopes[p]
}
