package session

import (
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
func readCallToolResult(result []byte) (isError, needsInput bool, err error) {
	var wire struct {
		Meta              mcp.Meta       `json:"_meta,omitempty"`
		Content           []*wireContent `json:"content"`
		StructuredContent any            `json:"structuredContent,omitempty"`
		IsError           bool           `json:"isError,omitempty"`
		ResultType        string         `json:"resultType"`
	}
	if _, err := sdkjson.Parse(result, &wire, sdkjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return false, false, err
	}
	if err := checkContents(wire.Content, nil); err != nil {
		return false, false, err
	}
	return wire.IsError, wire.ResultType == "input_required", nil
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
