package lineconn

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdkjson "github.com/segmentio/encoding/json"
)

// DecodeMessage reads one JSON-RPC message as go-sdk's
// jsonrpc.DecodeMessage reads it — the same fields, matched by exact name
// with go-sdk's own JSON library and flags, the same nesting bound, the
// same checks of the version and the id — without the two 32 KiB buffers
// that go-sdk's stream decoder makes and clears for every message, which
// were most of what a small message cost both of colibri's line-framed
// connections (docs/benchmarks.md, "The serve --only hop"). data must be
// one JSON value (both connections check it first).
func DecodeMessage(data []byte) (jsonrpc.Message, error) {
	if err := checkDepth(data); err != nil {
		return nil, err
	}
	var m struct {
		VersionTag string             `json:"jsonrpc"`
		ID         any                `json:"id,omitempty"`
		Method     sdkjson.RawMessage `json:"method"`
		Params     sdkjson.RawMessage `json:"params,omitempty"`
		Result     sdkjson.RawMessage `json:"result,omitempty"`
		Error      *jsonrpc.Error     `json:"error,omitempty"`
	}
	if _, err := sdkjson.Parse(data, &m, sdkjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if m.VersionTag != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", m.VersionTag, "2.0")
	}
	id, err := jsonrpc.MakeID(m.ID)
	if err != nil {
		return nil, err
	}
	if len(m.Method) > 0 {
		// The "method" key was present: its value decoded (null is "").
		var method string
		if err := sdkjson.Unmarshal(m.Method, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: []byte(m.Params)}, nil
	}
	if !id.IsValid() {
		return nil, errInvalidResponse
	}
	r := &jsonrpc.Response{ID: id, Result: []byte(m.Result)}
	if m.Error != nil {
		r.Error = m.Error
	}
	return r, nil
}

// errInvalidResponse is go-sdk's error for a message with neither a
// method nor an id (jsonrpc2.ErrInvalidRequest).
var errInvalidResponse = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}

// maxDepth is go-sdk's bound on a message's nesting (internal/json).
const maxDepth = 1000

var errTooDeep = errors.New("json: exceeded maximum nesting depth of 1000")

// checkDepth is go-sdk's pass over a message for its nesting.
func checkDepth(data []byte) error {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > maxDepth {
				return errTooDeep
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}
