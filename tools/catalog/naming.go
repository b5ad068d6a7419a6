package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// ToolRef is one hosted tool: the registry's server name and the tool's
// name as that server lists it.
type ToolRef struct {
	Server, Tool string
}

// NameRequest asks for a name for one hosted tool in aggregate mode.
type NameRequest struct {
	ToolRef
	Prefix string // the server's tool_prefix, or its name
}

// MaxNameLen is the longest tool name an editor accepts (docs/cli.md#aggregate-mode:
// ^[A-Za-z0-9_-]{1,64}$).
const MaxNameLen = 64

// hashLen is the hex digits of the suffix a shortened or colliding name gets.
const hashLen = 6

// ExposedNames names each hosted tool for aggregate mode: PREFIX__TOOL,
// with every character outside [A-Za-z0-9_-] made "_". A name that is too
// long, that several tools would share, or that is reserved (colibri's own
// tools) is shortened and given "_" and six hex digits of a hash of its
// server and tool instead, so that it is the same on every start. Names
// depend on the set of tools only, never on the order they come in.
//
// It is a pure function: the aggregate routes each name to its tool by the
// table it returns, never by splitting the name on "__" (server and tool
// names may hold "_" and "__" themselves).
func ExposedNames(reqs []NameRequest, reserved ...string) map[ToolRef]string {
	// One request per tool, in a fixed order: the first prefix given for a
	// tool wins (a registry has one per server).
	prefix := map[ToolRef]string{}
	var refs []ToolRef
	for _, r := range reqs {
		if _, ok := prefix[r.ToolRef]; !ok {
			prefix[r.ToolRef] = r.Prefix
			refs = append(refs, r.ToolRef)
		}
	}
	slices.SortFunc(refs, compareRefs)

	taken := map[string]int{} // plain names wanted, and how many want each
	for _, n := range reserved {
		taken[n] = 2 // never given out
	}
	base := make(map[ToolRef]string, len(refs))
	for _, ref := range refs {
		b := sanitize(prefix[ref]) + "__" + sanitize(ref.Tool)
		base[ref] = b
		taken[b]++
	}

	names := make(map[ToolRef]string, len(refs))
	used := map[string]bool{}
	for _, n := range reserved {
		used[n] = true
	}
	// Plain names first: a tool whose natural name is free keeps it, and a
	// hashed name gives way to it.
	var hashed []ToolRef
	for _, ref := range refs {
		b := base[ref]
		if len(b) > MaxNameLen || taken[b] > 1 {
			hashed = append(hashed, ref)
			continue
		}
		names[ref] = b
		used[b] = true
	}
	for _, ref := range hashed {
		// Salt 0 almost always; another only if six hex digits collide
		// with a name already given (then in the fixed order above).
		for salt := 0; ; salt++ {
			n := withHash(base[ref], ref, salt)
			if !used[n] {
				names[ref] = n
				used[n] = true
				break
			}
		}
	}
	return names
}

func compareRefs(a, b ToolRef) int {
	if c := strings.Compare(a.Server, b.Server); c != 0 {
		return c
	}
	return strings.Compare(a.Tool, b.Tool)
}

// sanitize keeps [A-Za-z0-9_-] and makes every other character (each rune,
// or each byte that is not UTF-8) one "_".
func sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// withHash is name shortened to leave room for "_" and hashLen hex digits
// of a hash of the tool's server and name (and salt, when not zero).
func withHash(name string, ref ToolRef, salt int) string {
	h := sha256.New()
	h.Write([]byte(ref.Server))
	h.Write([]byte{0})
	h.Write([]byte(ref.Tool))
	if salt > 0 {
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(salt)))
	}
	suffix := "_" + hex.EncodeToString(h.Sum(nil))[:hashLen]
	if room := MaxNameLen - len(suffix); len(name) > room {
		name = name[:room] // sanitized: one byte per character
	}
	return name + suffix
}
