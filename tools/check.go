package tools

//lint:file-ignore SA1019 check --probe --capabilities offers sampling and roots on purpose: servers still offer tools to callers that have them (deprecated, not removed, in 2026-07-28).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// CheckResult is what `colibri-mcp check --json` prints.
type CheckResult struct {
	ConfigPath string        `json:"config_path"`
	OK         bool          `json:"ok"`
	Error      *ErrorDetail  `json:"error,omitempty"`
	Servers    []CheckServer `json:"servers"`
	// Warnings fail the check (exit 1) without failing a server: a
	// registry entry changed since its pins were made, a lock that holds a
	// server the registry lacks.
	Warnings []string `json:"warnings,omitempty"`
	// With check --root, the service's files in the image, as paths of
	// the image: its env file (when it has one), state folder and pin
	// file.
	EnvFile  string `json:"env_file,omitempty"`
	StateDir string `json:"state_dir,omitempty"`
	PinFile  string `json:"pin_file,omitempty"`
}

// CheckServer is one server's line of check.
type CheckServer struct {
	Server string       `json:"server"`
	OK     bool         `json:"ok"`
	Error  *ErrorDetail `json:"error,omitempty"`
	Tools  *int         `json:"tools,omitempty"` // with Probe
	// Capabilities and ToolsWith are, with Probe and
	// CheckOptions.Capabilities, the set a caller offered ("elicitation,
	// roots,sampling") and the tools the server listed to it.
	Capabilities string `json:"capabilities,omitempty"`
	ToolsWith    *int   `json:"tools_with_capabilities,omitempty"`
	// Confinement says how the entry's processes are confined, in one line.
	Confinement string `json:"confinement"`
	// Changed are the tools whose definitions differ from their pins
	// (with Probe); under pin: enforce they fail the check.
	Changed []pin.Change `json:"changed,omitempty"`
	// Flagged are the tools whose definitions the pin scan flagged (with
	// Probe), each with its flags; they fail the check only where they
	// are hidden (then they are among Changed).
	Flagged []FlaggedTool `json:"flagged,omitempty"`
	Spare   int           `json:"spare,omitempty"` // started processes kept ready (serve keeps them)
	// RunTime are the variables (${NAME}) the entry reads where it runs:
	// check --root reports them, never reading the build host's.
	RunTime []string `json:"set_at_run_time,omitempty"`
}

// FlaggedTool is one tool check found flagged.
type FlaggedTool struct {
	Name  string     `json:"name"`
	Flags []pin.Flag `json:"flags"`
}

// CheckOptions say what Check does and whom it tells as it goes.
type CheckOptions struct {
	// Probe also starts (or connects to) each server and lists its tools.
	Probe bool
	// Capabilities, with Probe, are client capabilities ("sampling",
	// "roots", "elicitation") each server is first listed with, as a caller
	// offering them would see it, before it is listed as one offering none:
	// both lists are pinned, so that a staging machine pins the tools a
	// server offers only to such callers (a server's first list is pinned
	// whole; docs/security.md, locked pins).
	Capabilities []string
	// Read, when set, is told the servers' names once the registry is
	// read, before any server is checked.
	Read func(names []string)
	// Done, when set, is given each server's result as soon as it is
	// known, one at a time: with Probe, a server that hangs until its
	// timeout must not hide the others' answers (nor their reasons).
	Done func(CheckServer)
}

// Check validates the registry and what would stop each server from
// starting (Host.Check), and with Probe lists each server's tools
// concurrently, as list_tools does for the caller of ctx. A registry that
// cannot be read is the result's Error; a server's failure is its entry's.
func (s *Service) Check(ctx context.Context, opts CheckOptions) *CheckResult {
	out := &CheckResult{ConfigPath: s.opts.ConfigPath, OK: true, Servers: []CheckServer{}}
	reg, err := s.opts.Registry() // a missing one names the paths tried
	if err != nil {
		out.OK = false
		out.Error = Detail(&failure.Error{Kind: failure.KindConfig, Err: err})
		return out
	}
	names := reg.Names()
	if err := s.pinWarnings(reg, out); err != nil {
		out.OK = false
		out.Error = Detail(&failure.Error{Kind: failure.KindConfig, Err: err})
		return out
	}
	if opts.Read != nil {
		opts.Read(names)
	}
	var mu sync.Mutex
	out.Servers = make([]CheckServer, len(names))
	done := func(i int, r CheckServer) {
		mu.Lock()
		defer mu.Unlock()
		out.Servers[i] = r
		if opts.Done != nil {
			opts.Done(r)
		}
	}
	var wg sync.WaitGroup
	for i, name := range names {
		srv := reg.Servers[name]
		r := CheckServer{Server: name, OK: true, Confinement: s.opts.Host.Confinement(srv), Spare: srv.Spare}
		if err := s.stateProblem(reg, srv); err != nil {
			r.OK, r.Error = false, Detail(err)
			done(i, r)
			continue
		}
		if err := s.opts.Host.Check(srv); err != nil {
			r.OK, r.Error = false, Detail(err)
			done(i, r)
			continue
		}
		if !opts.Probe {
			done(i, r)
			continue
		}
		wg.Go(func() {
			var withCaps []pin.Change
			if len(opts.Capabilities) > 0 {
				var err error
				if r.Capabilities, r.ToolsWith, withCaps, err = s.probeWith(ctx, reg, srv, opts.Capabilities); err != nil {
					r.OK, r.Error = false, Detail(err)
					done(i, r)
					return
				}
			}
			listed, err := s.ListTools(ctx, ListToolsInput{Server: name, Detail: DetailNames}, nil)
			switch {
			case err != nil:
				r.OK, r.Error = false, Detail(err)
			case len(listed.Servers) == 1:
				n := len(listed.Servers[0].Tools)
				r.Tools = &n
				r.Changed = mergeChanges(listed.Servers[0].Changed, withCaps)
				for _, e := range listed.Servers[0].Tools {
					if len(e.Flags) > 0 {
						r.Flagged = append(r.Flagged, FlaggedTool{Name: e.Name, Flags: e.Flags})
					}
				}
				r.OK = len(r.Changed) == 0 || reg.PinMode(srv) != registry.PinEnforce
			}
			done(i, r)
		})
	}
	wg.Wait()
	for _, r := range out.Servers {
		if !r.OK {
			out.OK = false
		}
	}
	if len(out.Warnings) > 0 {
		out.OK = false
	}
	return out
}

// probeWith lists srv's tools as callers offering the capabilities names
// and each smaller set of them would see them, each list pinned for its
// set (check --probe --capabilities): a lock marks a tool with the
// capabilities of every set it appeared in, so that one a server offers
// only to samplers needs sampling alone, not every capability probed
// (docs/security.md, locked pins). The whole set is listed first: a
// server's first list is pinned whole, and each smaller set's tools are
// then known. It returns the whole set, its tools kept and the changes
// from their pins of every set. The callers answer no request the server
// makes while listing: check has no model, user or folders to offer.
func (s *Service) probeWith(ctx context.Context, reg *registry.Registry, srv *registry.Server, names []string) (caps string, n *int, changed []pin.Change, err error) {
	refuse := errors.New("colibri-mcp check --probe answers no request of the server's while listing its tools")
	var sets [][]string
	for mask := 1; mask < 1<<len(names); mask++ {
		var set []string
		for i, name := range names {
			if mask&(1<<i) != 0 {
				set = append(set, name)
			}
		}
		sets = append(sets, set)
	}
	slices.SortStableFunc(sets, func(a, b []string) int { return len(b) - len(a) })
	for i, set := range sets {
		c := &session.Caller{}
		for _, name := range set {
			switch name {
			case "sampling":
				c.CreateMessage = func(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) { return nil, refuse }
			case "elicitation":
				c.Elicit = func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) { return nil, refuse }
			case "roots":
				c.ListRoots = func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error) { return nil, refuse }
			default:
				return "", nil, nil, fmt.Errorf("check: capability %q: want sampling, roots or elicitation", name)
			}
		}
		tools, err := s.opts.Host.ListToolsFor(ctx, srv, c)
		if err != nil {
			return "", nil, nil, err
		}
		kept, ch, err := s.screenFor(ctx, reg, srv, capsOf(c), tools)
		if err != nil {
			return "", nil, nil, err
		}
		changed = mergeChanges(changed, ch)
		if i == 0 {
			k := len(kept)
			caps, n = capsOf(c), &k
		}
	}
	return caps, n, changed, nil
}

// mergeChanges is a, then those of b whose names a lacks.
func mergeChanges(a, b []pin.Change) []pin.Change {
	for _, c := range b {
		if !slices.ContainsFunc(a, func(d pin.Change) bool { return d.Name == c.Name }) {
			a = append(a, c)
		}
	}
	return a
}

// pinWarnings are what the pins have to say of reg (docs/security.md,
// locked pins): each entry that changed since its pins were made (an
// upgrade to review; its definitions are still judged by their digests),
// and each server a lock holds that the registry lacks. A pin file that
// cannot be read is the error.
func (s *Service) pinWarnings(reg *registry.Registry, out *CheckResult) error {
	if s.opts.Pins == nil {
		return nil
	}
	s.configurePins(reg)
	warnings, err := PinWarnings(s.opts.Pins, reg)
	out.Warnings = append(out.Warnings, warnings...)
	return err
}

// PinWarnings are pinWarnings' of pins, configured for reg (PinConfig):
// check's, and check --root's of an image's lock.
func PinWarnings(pins *pin.Store, reg *registry.Registry) (warnings []string, err error) {
	pinned := false
	for _, name := range reg.Names() {
		if reg.PinMode(reg.Servers[name]) != registry.PinOff {
			pinned = true
		}
	}
	if !pinned {
		return nil, nil
	}
	locked, err := pins.Locked()
	if err != nil && !reg.Locked() {
		return nil, nil // an unusable pin file fails the lists that need it, with its reason
	}
	if err != nil {
		return nil, err
	}
	for _, name := range reg.Names() {
		if reg.PinMode(reg.Servers[name]) == registry.PinOff {
			continue
		}
		changed, known, err := pins.EntryChange(name)
		if err != nil {
			return warnings, err
		}
		if known && len(changed) > 0 {
			fix := fmt.Sprintf("review it with colibri-mcp pins diff %s and accept it (colibri-mcp pins accept %s)", name, name)
			if locked {
				fix = "renew the lock where the servers are pinned (colibri-mcp pins diff, pins accept, pins export)"
			}
			warnings = append(warnings, fmt.Sprintf("server %s: the registry entry changed since its pins were made (%s): an upgrade? %s", name, strings.Join(changed, ", "), fix))
		}
	}
	if locked {
		held, err := pins.Servers()
		if err != nil {
			return warnings, err
		}
		for _, name := range held {
			if reg.Servers[name] == nil {
				warnings = append(warnings, fmt.Sprintf("the locked pin file %s holds server %s, which the registry does not have", pins.Path(), name))
			}
		}
	}
	return warnings, nil
}

// Failed is how many servers failed the check.
func (r *CheckResult) Failed() int {
	n := 0
	for _, s := range r.Servers {
		if !s.OK {
			n++
		}
	}
	return n
}

// stateProblem is srv's want of a state folder as a config failure, or nil.
func (s *Service) stateProblem(reg *registry.Registry, srv *registry.Server) error {
	if s.opts.StateProblem == nil {
		return nil
	}
	if err := s.opts.StateProblem(reg, srv); err != nil {
		return &failure.Error{Kind: failure.KindConfig, Server: srv.Name, Err: err}
	}
	return nil
}
