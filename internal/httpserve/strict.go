package httpserve

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/colibri-mcp/colibri-mcp/internal/strict"
)

// A POST's message that colibri's checks and the hosted server behind them
// could read two ways (a key twice, a key that differs only in case from
// one MCP defines, invalid UTF-8, an id that is not an exact integer) is
// refused before go-sdk reads it, on both transports (docs/protocol.md,
// "Strict reading"): 400, with a JSON-RPC error naming the JSON location.

// refuseUnclear answers a POST whose body (its message) strict.Check
// refused, and reports whether it did.
func refuseUnclear(w http.ResponseWriter, body []byte, log *slog.Logger) bool {
	_, problem := strict.Check(body, strict.FromCaller)
	if problem == nil {
		return false
	}
	code := int64(jsonrpc.CodeInvalidRequest)
	if problem.InParams {
		code = jsonrpc.CodeInvalidParams
	}
	id := "null"
	if problem.Pointer != "/id" {
		id = plainID(body)
	}
	msg, _ := json.Marshal("invalid request: " + problem.Error())
	log.Warn("http: refused a message that could be read two ways", "at", problem.Pointer)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":`+jsonNumber(code)+`,"message":`+string(msg)+`}}`)
	return true
}

// plainID is the message's id as JSON when it is a plain string or a safe
// integer, else null.
func plainID(body []byte) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 {
		return "null"
	}
	var v any
	if json.Unmarshal(m.ID, &v) != nil {
		return "null"
	}
	switch x := v.(type) {
	case string:
		if b, err := json.Marshal(x); err == nil {
			return string(b)
		}
	case float64:
		if s := string(m.ID); !strings.ContainsAny(s, ".eE") && x == float64(int64(x)) && x < 1<<53 && x > -(1<<53) {
			return s
		}
	}
	return "null"
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
