package host

import "github.com/modelcontextprotocol/go-sdk/mcp"

// Gate decides which of a hosted server's tools one call may reach, and
// what its failure may name: the policy and the pins, for the caller of
// the call (tools implements it, in tools/policy.go). It is not the relay
// (session.Caller): the hosted server never sees it. CallTool asks it at
// these points, and nowhere else:
//
//  1. BeforeStart, once, before anything is started (admitHeld), on the
//     list the host already holds of the server;
//  2. BeforeSend, in each attempt, before the arguments are checked
//     against the tool's inputSchema and tools/call is sent (vet), on the
//     list the call is checked against, and again on a cached list read
//     afresh;
//  3. Nameable, whenever an unknown_tool failure names the server's tools.
//
// A nil Gate admits every call and names every tool.
type Gate interface {
	// BeforeStart asks whether tool, found in held, may be called. held is
	// the list the host holds of the server (perhaps older than the
	// server's own): for a caller offering no capability it is asked only
	// on a list read offering none, since a server may list its tools
	// differently to a client that can sample or elicit. An error (kind
	// denied or tool_changed) refuses the call with nothing started.
	BeforeStart(tool *mcp.Tool, held []*mcp.Tool) error
	// BeforeSend asks whether tool, found in list, may be called: list is
	// the one this attempt's call is checked against (a fresh session's,
	// the list cache's, a warm session's), so that no call runs on a
	// decision taken from an older list. It is asked before the schema
	// check, so that a caller learns nothing of a tool it may not call. An
	// error (kind denied or tool_changed) refuses the call before
	// tools/call is sent.
	BeforeSend(tool *mcp.Tool, list []*mcp.Tool) error
	// Nameable is the part of list that an unknown_tool failure may name
	// to the caller.
	Nameable(list []*mcp.Tool) []*mcp.Tool
}

// openGate is the gate of a call that nothing restricts (a nil Gate).
type openGate struct{}

func (openGate) BeforeStart(*mcp.Tool, []*mcp.Tool) error { return nil }
func (openGate) BeforeSend(*mcp.Tool, []*mcp.Tool) error  { return nil }
func (openGate) Nameable(list []*mcp.Tool) []*mcp.Tool    { return list }
