package pin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
)

// staged is a pin file with two servers pinned, one change pending, a tool
// offered only to callers that sample, and an accepted change.
func staged(t *testing.T) (*pin.Store, string) {
	t.Helper()
	store, path := newStore(t)
	store.Configure(pin.Config{Entries: map[string]*pin.Fingerprint{"s": {Digest: "sha256:e1", Fields: map[string]string{"args": "sha256:a1"}}}})
	store.Check("s", pin.NoCaps, base())
	store.Check("s", pin.Caps("sampling"), append(base(), tool("sample", "Samples.")))
	if _, err := store.Accept("s", "tool:sample"); err != nil { // new to the server: pending until accepted
		t.Fatal(err)
	}
	store.CheckPrompts("s", pin.NoCaps, prompts())
	store.Check("t", pin.NoCaps, []*mcp.Tool{tool("one", "One <IMPORTANT>.")})
	l := base()
	l[0] = tool("echo", "Echoes, accepted.", "message")
	store.Check("s", pin.NoCaps, l)
	if _, err := store.Accept("s", "tool:echo"); err != nil {
		t.Fatal(err)
	}
	l[2] = tool("stay", "Pending, never accepted.")
	store.Check("s", pin.NoCaps, l)
	return store, path
}

// pins export is canonical: the same pins give the same bytes, whatever
// the times they were pinned at and the order they were read in; keys
// sorted, two-space indent, no timestamps; "kind": "lock"; only accepted
// definitions, one set a server, each marked with the capabilities it
// needs.
func TestExportIsCanonical(t *testing.T) {
	a, _ := staged(t)
	b, _ := staged(t) // pinned at other times, into another file
	ea, err := a.Export()
	if err != nil {
		t.Fatal(err)
	}
	eb, _ := b.Export()
	ea2, _ := a.Export()
	if !bytes.Equal(ea, eb) || !bytes.Equal(ea, ea2) {
		t.Fatalf("two exports of the same pins differ:\n%s\n---\n%s", ea, eb)
	}
	var doc any
	if err := json.Unmarshal(ea, &doc); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	enc := json.NewEncoder(&again)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(doc) // maps: keys sorted
	if !bytes.Equal(ea, again.Bytes()) {
		t.Errorf("export is not sorted, two-space JSON:\n%s\nwant\n%s", ea, again.Bytes())
	}
	for _, volatile := range []string{`"pinned":`, `"seen":`, `"pending"`, "T00:", time.Now().Format("2006-01-02"), "Pending, never accepted."} {
		if bytes.Contains(ea, []byte(volatile)) {
			t.Errorf("export holds %s:\n%s", volatile, ea)
		}
	}
	var l pin.Lock
	json.Unmarshal(ea, &l)
	if l.Kind != "lock" || l.Servers["s"] == nil || l.Servers["t"] == nil {
		t.Fatalf("export: %+v", l)
	}
	s := l.Servers["s"]
	if got := s.Tools["sample"][0].Capabilities; !reflect.DeepEqual(got, []string{"sampling"}) {
		t.Errorf("a tool offered only to samplers needs %v, want [sampling]", got)
	}
	if got := s.Tools["read"][0].Capabilities; len(got) != 0 || len(s.Tools["read"]) != 1 {
		t.Errorf("a tool of every set: %+v, want one definition needing nothing", s.Tools["read"])
	}
	// echo was accepted in the set list_tools reads; samplers' sessions
	// still hold the first definition: one each, each marked.
	var echoes []string
	for _, d := range s.Tools["echo"] {
		echoes = append(echoes, fmt.Sprintf("%v %v %v", d.Capabilities, d.Reviewed, strings.Contains(string(d.Definition), "accepted")))
	}
	slices.Sort(echoes)
	if want := []string{"[] true true", "[sampling] false false"}; !reflect.DeepEqual(echoes, want) || s.Tools["read"][0].Reviewed {
		t.Errorf("echo's definitions (capabilities, reviewed, the accepted one): %v, want %v; read %+v", echoes, want, s.Tools["read"][0])
	}
	if s.Prompts["greet"] == nil || s.RegistryEntry == nil || s.RegistryEntry.Digest != "sha256:e1" {
		t.Errorf("prompts and the registry entry: %+v", s)
	}
	if !bytes.Contains(ea, []byte("One <IMPORTANT>.")) {
		t.Errorf("export escapes HTML: %s", ea)
	}
	one, _ := a.Export("t")
	if bytes.Contains(one, []byte(`"s":`)) || !bytes.Contains(one, []byte(`"t":`)) {
		t.Errorf("export of one server:\n%s", one)
	}
	if _, err := a.Export("x"); err == nil || !strings.Contains(err.Error(), `no pins for server "x"`) {
		t.Errorf("export of an unknown server: %v", err)
	}
}

// shipLock writes an export into a folder of its own, as an image would
// hold it (0644), and returns its path.
func shipLock(t *testing.T, data []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "etc")
	os.Mkdir(dir, 0o755)
	path := filepath.Join(dir, "pins.lock")
	if err := pin.WriteLock(path, data); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o644 {
		t.Fatalf("WriteLock: mode %v, want 0644", st.Mode())
	}
	return path
}

// A lock is only read: what it holds is trusted, for the sessions that
// offer what each definition needs; what it does not hold (a server, a
// tool, a changed definition) is not, Locked saying so; nothing is
// written, no file appears beside it, and accept and reset are refused
// with how to renew it.
func TestLockIsOnlyRead(t *testing.T) {
	a, _ := staged(t)
	data, _ := a.Export()
	path := shipLock(t, data)
	old, _ := os.Stat(path)
	store := pin.Open(path, pin.Options{})

	accepted := base()
	accepted[0] = tool("echo", "Echoes, accepted.", "message")
	if v, err := store.Check("s", pin.NoCaps, accepted); err != nil || v.Changed != nil {
		t.Errorf("the accepted list: %v, %v; want trusted", v.Changed, err)
	}
	if v, _ := store.Check("s", pin.NoCaps, append(accepted, tool("sample", "Samples."))); !reflect.DeepEqual(v.Changed, map[string][]string{"sample": {"new"}}) || !v.Locked {
		t.Errorf("a samplers' tool to a session that does not sample: %+v", v)
	}
	if v, _ := store.Check("s", pin.Caps("roots", "sampling"), append(accepted, tool("sample", "Samples."))); v.Changed != nil {
		t.Errorf("a samplers' tool to a session that samples: %v", v.Changed)
	}
	if v, _ := store.Check("s", pin.NoCaps, base()); !reflect.DeepEqual(v.Changed, map[string][]string{"echo": {"description"}}) {
		t.Errorf("a definition the lock holds another of: %v", v.Changed)
	}
	if v, _ := store.Check("absent", pin.NoCaps, base()); len(v.Changed) != 3 || !v.Locked || v.Changed["echo"][0] != "new" {
		t.Errorf("a server the lock does not hold: %+v; want every tool not trusted", v)
	}
	if v, _ := store.CheckPrompts("s", pin.NoCaps, []*mcp.Prompt{{Name: "new-prompt"}}); v.Changed["new-prompt"] == nil {
		t.Errorf("a prompt the lock does not hold: %v", v.Changed)
	}
	// pins diff shows what the lists showed; nothing was recorded.
	diffs, err := store.Diff("s")
	if err != nil || len(diffs) == 0 {
		t.Fatalf("Diff under the lock: %v, %v", diffs, err)
	}
	var lockedErr *pin.LockedError
	if _, err := store.Accept("s"); !errors.As(err, &lockedErr) || !strings.Contains(err.Error(), "pins export --output") {
		t.Errorf("accept on a lock: %v", err)
	}
	if err := store.Reset("s"); !errors.As(err, &lockedErr) {
		t.Errorf("reset on a lock: %v", err)
	}
	if err := store.Reviewed("s", diffs); err != nil {
		t.Errorf("Reviewed on a lock: %v, want nothing written and no error", err)
	}
	now, _ := os.Stat(path)
	if !now.ModTime().Equal(old.ModTime()) || now.Size() != old.Size() || !os.SameFile(old, now) {
		t.Errorf("the lock changed: %v %d → %v %d", old.ModTime(), old.Size(), now.ModTime(), now.Size())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("files beside the lock: %v", entries)
	}
	if locked, err := store.Locked(); !locked || err != nil {
		t.Errorf("Locked: %v, %v", locked, err)
	}
}

// "pin": "locked" makes any pin file a lock: the file the staging machine
// pinned into is only read, a server it does not hold is not trusted, and
// no change is recorded.
func TestRegistryLocksAPinFile(t *testing.T) {
	store, path := staged(t)
	before, _ := os.ReadFile(path)
	store.Configure(pin.Config{Locked: true})
	l := base()
	l[1] = tool("read", "Reads, and more.")
	if v, err := store.Check("s", pin.NoCaps, l); err != nil || v.Changed["read"] == nil || !v.Locked {
		t.Errorf("a change under the lock: %+v, %v", v, err)
	}
	if v, _ := store.Check("fresh", pin.NoCaps, base()); len(v.Changed) != 3 {
		t.Errorf("a server never pinned, under the lock: %v; want not trusted (never pinned at first sight)", v.Changed)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Error("the pin file was written under the lock")
	}
	if _, err := os.Stat(path + ".lock"); err == nil {
		// staged() wrote through the flock; a lock file from then may be there.
		os.Remove(path + ".lock")
	}
	store.Check("fresh2", pin.NoCaps, base())
	if _, err := os.Stat(path + ".lock"); err == nil {
		t.Error("a lock file was made beside the pin file under the lock")
	}
	// Unlocked again, it records as before.
	store.Configure(pin.Config{})
	if v, _ := store.Check("fresh", pin.NoCaps, base()); v.Changed != nil {
		t.Errorf("unlocked: %v", v.Changed)
	}
}

// A lock that cannot be trusted is a config error naming the file and the
// fix: one that does not parse, a link, one others may write, one another
// user owns, a missing one under "pin": "locked", one edited by hand.
func TestBadLockIsAnError(t *testing.T) {
	a, _ := staged(t)
	data, _ := a.Export()
	cases := []struct {
		name  string
		setup func(path string)
		says  string
	}{
		{"not JSON", func(p string) { os.WriteFile(p, []byte(`{"kind": "lock", "version": 2, "servers": {`), 0o644) }, "export it again"},
		{"a link", func(p string) { os.Rename(p, p+".real"); os.Symlink(p+".real", p) }, "not a link to it"},
		{"group-writable", func(p string) { os.Chmod(p, 0o664) }, "chmod 644"},
		{"missing", func(p string) { os.Remove(p) }, "does not exist"},
		{"edited", func(p string) {
			os.WriteFile(p, bytes.Replace(data, []byte("Echoes, accepted."), []byte("Echoes, edited."), 1), 0o644)
		}, "does not have its digest"},
		{"another kind", func(p string) { os.WriteFile(p, []byte(`{"kind": "vault", "version": 2}`), 0o644) }, `kind "vault"`},
	}
	if os.Geteuid() == 0 {
		// Owned by neither root nor colibri's user: whoever owns it would
		// decide which tools are trusted. (Only root can make such a file.)
		cases = append(cases, struct {
			name  string
			setup func(path string)
			says  string
		}{"another user's", func(p string) { os.Chown(p, 65534, 65534) }, "neither root nor this process's user"})
	}
	for _, c := range cases {
		path := shipLock(t, data)
		c.setup(path)
		store := pin.Open(path, pin.Options{})
		store.Configure(pin.Config{Locked: true})
		_, err := store.Check("s", pin.NoCaps, base())
		var ce *pin.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v; want a config error naming %s and saying %q", c.name, err, path, c.says)
		}
	}
}

// The registry entry's fingerprint is kept with the pins: pins diff tells
// an upgrade (the entry changed: which members) from a change of the same
// entry, and says when an entry names no version.
func TestEntryChangeWording(t *testing.T) {
	store, _ := newStore(t)
	v1 := &pin.Fingerprint{Digest: "sha256:1", Fields: map[string]string{"args": "sha256:a", "command": "sha256:c"}}
	v2 := &pin.Fingerprint{Digest: "sha256:2", Fields: map[string]string{"args": "sha256:b", "command": "sha256:c", "env": "sha256:e"}}
	store.Configure(pin.Config{Entries: map[string]*pin.Fingerprint{"s": v1}})
	store.Check("s", pin.NoCaps, base())
	l := base()
	l[0] = tool("echo", "Echoes v2.", "message")
	store.Check("s", pin.NoCaps, l)
	var out strings.Builder
	store.ShowDiff(&out, "s", false, "")
	if !strings.Contains(out.String(), "same registry entry, changed definitions: review before accepting") {
		t.Errorf("same entry:\n%s", out.String())
	}
	store.Configure(pin.Config{Entries: map[string]*pin.Fingerprint{"s": v2}})
	out.Reset()
	store.ShowDiff(&out, "s", false, "@acme/mcp")
	for _, want := range []string{"the registry entry changed since pinning (args, env): an upgrade — review and accept",
		"names no version of @acme/mcp", "colibri-mcp add --from-registry, or @acme/mcp@VERSION"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("upgrade: lacks %q:\n%s", want, out.String())
		}
	}
	// Accepting records the entry as it is now.
	if _, err := store.Accept("s"); err != nil {
		t.Fatal(err)
	}
	if changed, known, _ := store.EntryChange("s"); !known || changed != nil {
		t.Errorf("after accept: %v %v", changed, known)
	}
	// An upgrade that changed no definition is recorded by an accept too.
	store.Configure(pin.Config{Entries: map[string]*pin.Fingerprint{"s": v1}})
	if _, err := store.Accept("s"); !errors.Is(err, pin.ErrEntryRecorded) || !errors.Is(err, pin.ErrNothingPending) {
		t.Errorf("accept of an upgrade with no change: %v", err)
	}
	if changed, _, _ := store.EntryChange("s"); changed != nil {
		t.Errorf("the entry was not recorded: %v", changed)
	}
}

// docs/pins-lock.schema.json describes what pins export writes.
func TestExportMatchesItsSchema(t *testing.T) {
	a, _ := staged(t)
	data, _ := a.Export()
	schemaDoc, err := os.ReadFile("../../docs/pins-lock.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaDoc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("lock.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("lock.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err := sch.Validate(inst); err != nil {
		t.Errorf("the export does not match docs/pins-lock.schema.json: %v", err)
	}
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"kind": "lock", "version": 2, "servers": {"s": {"tools": {"x": [{"capabilities": [], "definition": {}, "digest": "md5:1"}]}}}}`))
	if sch.Validate(bad) == nil {
		t.Error("the schema takes a digest that is not sha256")
	}
}

// An entry added from the MCP Registry keeps its source with the pins:
// pins names the release pinned, and pins diff tells the publisher's
// release (the source changed) from the same release changing its
// definitions under it.
func TestEntrySourceShown(t *testing.T) {
	store, _ := newStore(t)
	v1 := &pin.Fingerprint{Digest: "sha256:1", Fields: map[string]string{"source": "sha256:a"}, Source: "io.github.acme/mcp@1.3.2"}
	v2 := &pin.Fingerprint{Digest: "sha256:2", Fields: map[string]string{"source": "sha256:b"}, Source: "io.github.acme/mcp@1.4.0"}
	store.Configure(pin.Config{Entries: map[string]*pin.Fingerprint{"s": v1}})
	store.Check("s", pin.NoCaps, base())
	report, err := store.Report("s")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	pin.WriteReport(&out, "pins.json", report)
	if !strings.Contains(out.String(), "s: pinned from io.github.acme/mcp@1.3.2\n") {
		t.Errorf("pins does not name the release pinned:\n%s", out.String())
	}
	l := base()
	l[0] = tool("echo", "Echoes v2.", "message")
	store.Check("s", pin.NoCaps, l)
	out.Reset()
	store.ShowDiff(&out, "s", false, "")
	if !strings.Contains(out.String(), "source: io.github.acme/mcp@1.3.2, as when pinned: the same release changed its definitions") {
		t.Errorf("same release, changed definitions:\n%s", out.String())
	}
	store.Configure(pin.Config{Entries: map[string]*pin.Fingerprint{"s": v2}})
	out.Reset()
	store.ShowDiff(&out, "s", true, "")
	var got struct {
		Entry pin.EntryStatus `json:"registry_entry"`
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil || got.Entry.PinnedSource != v1.Source || got.Entry.Source != v2.Source {
		t.Errorf("pins diff --json: %v %+v", err, got.Entry)
	}
	out.Reset()
	store.ShowDiff(&out, "s", false, "")
	if !strings.Contains(out.String(), "source: io.github.acme/mcp@1.3.2 when pinned, io.github.acme/mcp@1.4.0 now: the publisher's release") {
		t.Errorf("a new release:\n%s", out.String())
	}
}
