package tools

import (
	"context"
	"sync"

	"github.com/colibri-mcp/colibri-mcp/policy"
)

// callNote is what the layers of one call learn about it for its audit
// line and metrics: the outermost layer puts it in the context, the inner
// ones fill it in.
type callNote struct {
	mu     sync.Mutex
	policy *policy.Decision // the last decision taken, nil when the policy was not asked
	pin    string           // "changed" when the tool differs from its pin
}

type noteKey struct{}

func withNote(ctx context.Context, n *callNote) context.Context {
	return context.WithValue(ctx, noteKey{}, n)
}

// noteOf is the call's note, or nil outside an audited call (the methods
// of a nil note do nothing).
func noteOf(ctx context.Context) *callNote {
	n, _ := ctx.Value(noteKey{}).(*callNote)
	return n
}

func (n *callNote) decided(d policy.Decision) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.policy = &d
}

// pinned notes what pinning found of the called tool ("changed").
func (n *callNote) pinned(v string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pin = v
}

func (n *callNote) pinState() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.pin
}

func (n *callNote) decision() *policy.Decision {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.policy
}
