package record

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/colibri-mcp/colibri-mcp/policy"
)

// Note is what the layers of one call learn about it for its audit line
// and metrics: the outermost layer puts it in the context (WithNote), the
// inner ones fill it in (NoteOf).
type Note struct {
	mu     sync.Mutex
	policy *policy.Decision // the last decision taken, nil when the policy was not asked
	pin    string           // "changed" when the tool differs from its pin
	target *target          // what call_tool's input named, once its handler read it
}

// target is the server, tool and arguments a call_tool input named.
type target struct {
	server, tool string
	args         json.RawMessage
}

type noteKey struct{}

// WithNote is ctx carrying n.
func WithNote(ctx context.Context, n *Note) context.Context {
	return context.WithValue(ctx, noteKey{}, n)
}

// NoteOf is the call's note, or nil outside an audited call (the methods
// of a nil note do nothing).
func NoteOf(ctx context.Context) *Note {
	n, _ := ctx.Value(noteKey{}).(*Note)
	return n
}

// Decided notes the policy's decision on the call.
func (n *Note) Decided(d policy.Decision) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.policy = &d
}

// Named notes the server, tool and arguments call_tool's input names, as
// its handler read them: the input is decoded once, by the handler, and the
// audit line takes its names from there (Call.Named).
func (n *Note) Named(server, tool string, args json.RawMessage) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.target = &target{server, tool, args}
}

// Named is what the call's handler noted its input names (Note.Named), and
// whether it noted it: a handler that never ran (a call refused before it)
// noted nothing.
func (c *Call) Named() (server, tool string, args json.RawMessage, ok bool) {
	n := c.Note
	if n == nil {
		return "", "", nil, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.target == nil {
		return "", "", nil, false
	}
	return n.target.server, n.target.tool, n.target.args, true
}

// Pinned notes what pinning found of the called tool ("changed").
func (n *Note) Pinned(v string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pin = v
}

func (n *Note) pinState() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pin
}

func (n *Note) decision() *policy.Decision {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.policy
}
