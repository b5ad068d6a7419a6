package main

import (
	"github.com/colibri-mcp/colibri-mcp/internal/bulk"
	"github.com/colibri-mcp/colibri-mcp/internal/gcpace"
)

// collectEagerly paces serve's collector (internal/gcpace), eager while t
// holds large messages, unless the operator set GOGC or GOMEMLIMIT. The
// returned func stops the pacing.
func collectEagerly(t *bulk.Table, getenv func(string) (string, bool)) (stop func()) {
	stop, hold := gcpace.Serve(getenv)
	t.Watch(gcpace.EagerHeld, hold)
	return stop
}
