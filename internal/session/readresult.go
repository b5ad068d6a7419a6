package session

import (
	"bytes"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"
)

// readCallToolResult reads a relayed tools/call result as go-sdk's client
// reads one ((*mcp.CallToolResult).UnmarshalJSON): the same fields, matched
// by exact name with go-sdk's own JSON library and flags, every content
// block's type checked as go-sdk checks it (a tool_result's nested blocks
// among the five it allows), its errors worded alike — without the 32 KiB
// buffer that go-sdk's decoder makes and clears for each, the largest part
// of what reading a small result cost serve --only's fast path
// (docs/benchmarks.md, "The serve --only hop"). It answers the result's
// isError, and whether it asks for input (MRTR's resultType
// "input_required"). result is one JSON value of a line lineconn read,
// whose nesting was bounded then (go-sdk's bound of 1000 levels: a part
// of the line is no deeper). TestReadCallToolResultAsGoSDK and its fuzz
// target read the same inputs both ways.
//
// whole reports whether the result may reach the caller as written: it
// holds no null, no empty string (go-sdk's encoding leaves out a member it
// reads as empty, such as an annotation's lastModified or an icon's theme,
// which a strict client refuses as ""), and every member go-sdk's encoding
// of it always writes (content; a text block's text, an image's or audio's
// data and mimeType, a tool_use's id, name and input, a tool_result's
// toolUseId and content, an embedded resource's uri, a resource link's
// icons' src), so that a caller reads in it what go-sdk's path (decoding
// the result and encoding it again) would give it, members go-sdk does not
// know aside. Where not, go-sdk's path normalises what a strict client (the
// TypeScript SDK's schema) would refuse — a null content, isError: null, a
// text block without text — and callDirect takes that path. A null or ""
// inside a string or inside structuredContent, or an empty text, makes a
// result not whole too: it then costs a decoding, never a difference.
func readCallToolResult(result []byte) (isError, needsInput, whole bool, err error) {
	var wire struct {
		Meta              mcp.Meta            `json:"_meta,omitempty"`
		Content           []*wireContent      `json:"content"`
		StructuredContent any                 `json:"structuredContent,omitempty"`
		IsError           bool                `json:"isError,omitempty"`
		InputRequests     mcp.InputRequestMap `json:"inputRequests,omitempty"`
		RequestState      string              `json:"requestState,omitempty"`
		ResultType        string              `json:"resultType"`
	}
	if _, err := sdkjson.Parse(result, &wire, sdkjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return false, false, false, err
	}
	if err := checkContents(wire.Content, nil); err != nil {
		return false, false, false, err
	}
	whole = wire.Content != nil && !bytes.Contains(result, []byte("null")) && !bytes.Contains(result, []byte(`""`)) && wholeContents(wire.Content)
	return wire.IsError, wire.ResultType == "input_required", whole, nil
}

// wholeContents reports whether each block holds the members go-sdk's
// encoding of its type always writes (readCallToolResult's whole).
func wholeContents(blocks []*wireContent) bool {
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if b.Text == "" {
				return false
			}
		case "image", "audio":
			if len(b.Data) == 0 || b.MIMEType == "" {
				return false
			}
		case "tool_use":
			if b.ID == "" || b.Name == "" || b.Input == nil {
				return false
			}
		case "tool_result":
			if b.ToolUseID == "" || b.NestedContent == nil || !wholeContents(b.NestedContent) {
				return false
			}
		case "resource":
			if b.Resource != nil && b.Resource.URI == "" {
				return false
			}
		case "resource_link":
			for _, ic := range b.Icons {
				if ic.Source == "" {
					return false
				}
			}
		}
	}
	return true
}

// wireContent is go-sdk's reading of a content block (mcp's unexported
// wireContent), field for field.
type wireContent struct {
	Type              string                `json:"type"`
	Text              string                `json:"text,omitempty"`
	MIMEType          string                `json:"mimeType,omitempty"`
	Data              []byte                `json:"data,omitempty"`
	Resource          *mcp.ResourceContents `json:"resource,omitempty"`
	URI               string                `json:"uri,omitempty"`
	Name              string                `json:"name,omitempty"`
	Title             string                `json:"title,omitempty"`
	Description       string                `json:"description,omitempty"`
	Size              *int64                `json:"size,omitempty"`
	Meta              mcp.Meta              `json:"_meta,omitempty"`
	Annotations       *mcp.Annotations      `json:"annotations,omitempty"`
	Icons             []mcp.Icon            `json:"icons,omitempty"`
	ID                string                `json:"id,omitempty"`
	Input             map[string]any        `json:"input,omitempty"`
	ToolUseID         string                `json:"toolUseId,omitempty"`
	NestedContent     []*wireContent        `json:"content,omitempty"`
	StructuredContent any                   `json:"structuredContent,omitempty"`
	IsError           bool                  `json:"isError,omitempty"`
}

// toolResultAllows are the blocks go-sdk allows inside a tool_result.
var toolResultAllows = map[string]bool{"text": true, "image": true, "audio": true, "resource_link": true, "resource": true}

// checkContents is go-sdk's contentsFromWire less the building of the
// blocks: allow, when not nil, names the types allowed.
func checkContents(blocks []*wireContent, allow map[string]bool) error {
	for _, b := range blocks {
		if b == nil {
			return fmt.Errorf("nil content")
		}
		if allow != nil && !allow[b.Type] {
			return fmt.Errorf("invalid content type %q", b.Type)
		}
		switch b.Type {
		case "text", "image", "audio", "resource_link", "resource", "tool_use":
		case "tool_result":
			if b.NestedContent != nil {
				if err := checkContents(b.NestedContent, toolResultAllows); err != nil {
					return fmt.Errorf("tool_result nested content: %w", err)
				}
			}
		default:
			return fmt.Errorf("unrecognized content type %q", b.Type)
		}
	}
	return nil
}
