// Package importcmd is colibri-mcp import's work: an editor's MCP
// configuration found (FILE, or the editor's usual place), read within
// bounds, converted (internal/editorconf), shown, and with Write merged into
// the registry (registry/regfile: each entry validated first, the old file
// kept as FILE.bak); the secrets moved to ${NAME} written to an env file
// (0600), and with Apply the editor's file rewritten to start colibri
// instead (internal/editorconf/rewrite), kept as FILE.bak too. The command
// line reads the flags (ParseFrom, Options.Check) and maps the errors: a
// *UsageError is the person's to fix (exit 2), any other a failure.
//
//	err := importcmd.Run(importcmd.Options{From: editorconf.Cursor, Write: true,
//		Registry: path, Self: importcmd.Self(), Getenv: os.Getenv}, stdout, stderr)
package importcmd

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
	"github.com/colibri-mcp/colibri-mcp/internal/editorconf/rewrite"
	"github.com/colibri-mcp/colibri-mcp/internal/envfile"
	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/registry/regfile"
)

// Options are import's arguments (Check refuses those that do not go
// together), and where it runs.
type Options struct {
	File    string            // the editor's file; "" for From's usual place
	From    editorconf.Format // "" when the file's content tells
	JSON    bool              // print the entries as a registry document
	Write   bool              // merge them into Registry
	Apply   bool              // with Write and From: rewrite the editor's file
	Each    bool              // with Apply: each imported server's entry runs colibri serve --only NAME
	EnvFile string            // with Write: where the moved secrets go

	Registry     string              // the registry Write changes
	ExternalCall bool                // the editor's colibri entry turns calls on
	Self         string              // colibri's executable, for the editor's entry
	Getenv       func(string) string // colibri's environment (HOME, XDG_*)
	// BeforeApply, when set, runs between reading the editor's file and
	// rewriting it (a test changes the file there).
	BeforeApply func()
}

// UsageError is a mistake the person fixes by changing the command or a
// file (exit 2 to the command line); nothing was written.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func mistake(err error) error { return &UsageError{err} }

// editError is a refused or failed change of the registry.
func editError(err error) error {
	said, persons := regfile.Explain("import", err)
	if persons {
		return mistake(said)
	}
	return said
}

// absPath is path made absolute, for an editor's entry: the editor starts
// colibri in a folder of its own, where a relative --external-config names
// nothing.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// maxEditorFile bounds what import reads: editors' files are kilobytes, and
// a mistaken path (/dev/zero) must not exhaust memory.
const maxEditorFile = 4 << 20

// Run imports as o says: it prints what the editor's file holds (stdout),
// or its registry document (stdout; the findings on stderr), or merges it
// into the registry (o.Write). Names and values come from another program's
// file: stdout and stderr should escape control characters.
func Run(o Options, stdout, stderr io.Writer) error {
	getenv := o.Getenv
	home := getenv("HOME")
	path := o.File
	if path == "" {
		cwd, _ := os.Getwd()
		candidates := editorconf.Locations(o.From, runtime.GOOS, home, cwd, getenv)
		for _, c := range candidates {
			if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
				path = c
				break
			}
		}
		if path == "" {
			return mistake(fmt.Errorf("import: no %s configuration at %s: give its FILE", o.From.Describe(), strings.Join(candidates, " nor ")))
		}
	}
	data, err := readEditorFile(path)
	if err != nil {
		return mistake(fmt.Errorf("import: %s: %w", path, err))
	}
	if err := duplicateKeys(path, data); err != nil {
		return mistake(err)
	}
	format := o.From
	if format == "" {
		if format, err = editorconf.Detect(data, path); err != nil {
			var de *editorconf.DetectError
			if errors.As(err, &de) {
				return mistake(fmt.Errorf("import: %s: cannot tell which editor's file this is: %s: give --from %s (see 'colibri-mcp import --help')",
					path, de.Reason, strings.Join(editorconf.FormatNames(), "|")))
			}
			return mistake(fmt.Errorf("import: %s: %w", path, err))
		}
	}
	abs, _ := filepath.Abs(path)
	res, err := editorconf.Parse(data, format, editorconf.Options{Home: home, Workspace: editorconf.WorkspaceOf(abs), NetList: NetList(), NoSandbox: noSandbox()})
	if err != nil {
		return mistake(fmt.Errorf("import: %s: %w", path, err))
	}
	own := res.TakeColibri()
	switch {
	case o.JSON:
		if _, err := stdout.Write(editorconf.Document(res.Entries)); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "%s, %s: %s\n", path, res.Format.Describe(), count(len(res.Entries), "server"))
		printFindings(stderr, res, nil, "")
		return nil
	case o.Write:
		return write(o, path, data, res, own, stdout)
	}
	printImport(stdout, path, res, o.Registry)
	return nil
}

// NetList reports whether this colibri's registry takes a list of
// destinations in a sandbox's "net" (VS Code's allowedDomains become it,
// and add --net writes one).
func NetList() bool {
	_, err := registry.Parse(strings.NewReader(`{"servers":{"x":{"command":"/bin/true","sandbox":{"net":["example.com"]}}}}`), "")
	return err == nil
}

// noSandbox is why this colibri's registry takes no "sandbox" here ("" when
// it does): the registry's own words.
func noSandbox() string {
	_, err := registry.Parse(strings.NewReader(`{"servers":{"x":{"command":"/bin/true","sandbox":{}}}}`), "")
	var re *registry.Error
	if errors.As(err, &re) && len(re.Problems) > 0 {
		return re.Problems[0].Message
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// duplicateKeys refuses an editor's file with a key twice in one object, as
// the registry does: editors keep one or the other, so what import would
// convert may not be what the editor runs.
func duplicateKeys(path string, data []byte) error {
	dups := registry.DuplicateKeys(data)
	if len(dups) == 0 {
		return nil
	}
	lines := make([]string, len(dups))
	for i, p := range dups {
		lines[i] = p.String()
	}
	return fmt.Errorf("import: %s: %s; remove one of each (editors differ on which they keep)", path, strings.Join(lines, "; "))
}

// readEditorFile reads a regular file (or a link to one: editors' files are
// often linked from a dotfiles folder) of at most maxEditorFile bytes; a FIFO
// or a device is refused, never opened or waited on (safefile.OpenFollowing).
func readEditorFile(path string) ([]byte, error) {
	f, err := safefile.OpenFollowing(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err // the path is named by the caller
		}
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEditorFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxEditorFile {
		return nil, fmt.Errorf("larger than %d bytes: not an editor's configuration", maxEditorFile)
	}
	return data, nil
}

// printImport shows what import would add, each entry as the registry JSON
// it becomes, then what the user must know.
func printImport(w io.Writer, path string, res *editorconf.Result, registryPath string) {
	fmt.Fprintf(w, "%s, %s: %s\n", path, res.Format.Describe(), count(len(res.Entries), "server"))
	for _, e := range res.Entries {
		fmt.Fprintf(w, "\n%s: %s\n", quote(e.Name), e.Preview())
	}
	if len(res.Entries) > 0 || len(res.Notes) > 0 {
		fmt.Fprintln(w)
	}
	printFindings(w, res, nil, "")
	if len(res.Entries) == 0 {
		fmt.Fprintln(w, "Nothing to import.")
		return
	}
	fmt.Fprintf(w, "Nothing written: --write merges these into %s.\n", registryPath)
}

// printFindings lists the secrets moved, the notes, and the variables the
// entries read from colibri's environment (and where they go: envFile, the
// --env-file import writes, when given); with only set, for those entries
// alone.
func printFindings(w io.Writer, res *editorconf.Result, only []string, envFile string) {
	in := func(server string) bool { return only == nil || slices.Contains(only, server) }
	for _, m := range res.Moved {
		if in(m.Server) {
			fmt.Fprintln(w, m)
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	// The same hints whether import shows the entries or writes them.
	for _, e := range res.Entries {
		if h := editorconf.SpareHint(e); h != "" && in(e.Name) {
			fmt.Fprintf(w, "hint: server %s: %s\n", quote(e.Name), h)
		}
		if !in(e.Name) || e.Remote() {
			continue
		}
		// Without add's "(add --pass-env NAME …)": import has no such flag.
		if h := regfile.PassEnvHint(e.Command); h != "" {
			fmt.Fprintf(w, "hint: server %s: %s (docs/registry.md)\n", quote(e.Name), h)
		}
	}
	var vars []string
	for _, e := range res.Entries {
		if in(e.Name) {
			for _, v := range e.Variables() {
				if !slices.Contains(vars, v) {
					vars = append(vars, v)
				}
			}
		}
	}
	if len(vars) > 0 {
		slices.Sort(vars)
		where := "set them where colibri runs: NAME=value lines in a mode-0600 file that --env-file F loads (import --env-file F writes the moved secrets there), the env of its editor entry, or provider.env for the FreeBSD service"
		if envFile != "" {
			where = "the moved secrets go to " + envFile + " (--env-file), which 'colibri-mcp --env-file " + envFile + "' loads; set any other there too, or in colibri's environment"
		}
		fmt.Fprintf(w, "colibri reads from its environment: %s (%s)\n", strings.Join(vars, ", "), where)
	}
}

// importWrite merges the entries into the registry. Each entry, and then
// the merged document, must pass registry.Parse before anything is written;
// an entry the registry refuses is reported and left out. Then the moved
// secrets go to --env-file, and --apply rewrites the editor's file.
func write(o Options, source string, editorData []byte, res *editorconf.Result, own *editorconf.Entry, w io.Writer) error {
	registryPath := o.Registry
	if o.EnvFile != "" {
		if err := envfile.CheckPrivate(o.EnvFile); err != nil {
			return mistake(fmt.Errorf("import: --env-file %w: nothing written", err))
		}
	}
	var accepted []*editorconf.Entry
	var refused []string
	for _, e := range res.Entries {
		if err := registryAccepts(e, registryPath); err != nil {
			refused = append(refused, fmt.Sprintf("not written: %s: the registry refuses it: %v", e.Name, err))
			continue
		}
		accepted = append(accepted, e)
	}
	if o.Apply && TransientBuild(o.Self) {
		return mistake(fmt.Errorf("import --apply: colibri runs from a temporary build of 'go run' (%s), which Go deletes: the editor's entry would start nothing; build it first ('make build', 'go install ./cmd/colibri-mcp') and run that: nothing written", o.Self))
	}
	if o.Apply && o.EnvFile == "" {
		// --apply takes the secrets out of the editor's file; without an
		// env file they would be only in its FILE.bak, and the servers
		// the editor's colibri starts would fail for want of them.
		var names []string
		for _, m := range res.Moved {
			if slices.ContainsFunc(accepted, func(e *editorconf.Entry) bool { return e.Name == m.Server }) && !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
		if len(names) > 0 {
			return mistake(fmt.Errorf("import --apply: the secrets moved to ${NAME} (%s) would be left only in the editor's FILE.bak, where colibri does not read them: give --env-file F too (written mode 0600, loaded by the colibri entry): nothing written", strings.Join(names, ", ")))
		}
	}
	named := make([]regfile.Named, len(accepted))
	for i, e := range accepted {
		named[i] = regfile.Named{Name: e.Name, Entry: e.JSON()}
	}
	added, kept, backup, err := regfile.AddAll(registryPath, named)
	if err != nil {
		return editError(err)
	}
	fmt.Fprintf(w, "%s, %s: %s\n", source, res.Format.Describe(), count(len(res.Entries), "server"))
	if len(kept) > 0 {
		fmt.Fprintf(w, "kept: %s: the registry has these names already; not overwritten\n", strings.Join(kept, ", "))
	}
	for _, r := range refused {
		fmt.Fprintln(w, r)
	}
	if len(added) == 0 {
		printFindings(w, res, []string{}, o.EnvFile)
		fmt.Fprintf(w, "Nothing written: %s is unchanged.\n", registryPath)
	} else {
		fmt.Fprintf(w, "added to %s: %s\n", registryPath, strings.Join(added, ", "))
		if backup != "" {
			fmt.Fprintf(w, "the previous registry is kept as %s\n", backup)
		}
		printFindings(w, res, added, o.EnvFile)
	}
	if o.EnvFile != "" {
		if err := importEnvFile(o.EnvFile, res, added, o.Apply, w); err != nil {
			return err
		}
	}
	if !o.Apply {
		if len(added) > 0 {
			fmt.Fprintf(w, "\nThe editor still starts these servers itself: --apply rewrites %s to start colibri instead, or paste:\n%s", source, Snippet(o.Self, registryPath, o.ExternalCall, colibriEnvFile(o.EnvFile)))
			fmt.Fprintln(w, GateSentence(o.ExternalCall))
		}
		return nil
	}
	if o.Each {
		return applyEach(o, source, editorData, res, added, kept, colibriEnvFile(o.EnvFile), w)
	}
	return applyEditor(o, source, editorData, res, append(added, kept...), colibriEnvFile(o.EnvFile), own, w)
}

// colibriArgs are the arguments of colibri in an editor's entry: the
// registry named, the gate as chosen, the env file that holds the moved
// secrets.
func colibriArgs(o Options, envFile string) []string {
	args := []string{"--external-config", absPath(o.Registry)}
	if o.ExternalCall {
		args = append(args, "--external-call")
	}
	if envFile != "" {
		// The secrets import moved are in it: the editor's colibri loads
		// them, or every server that needs one fails for want of it.
		args = append(args, "--env-file", envFile)
	}
	return args
}

// GateSentence is what import says about the call gate of the entries it
// writes (or prints) for the editor: off leaves the servers list-only, and
// says how to turn it on; on says that it is.
func GateSentence(on bool) string {
	if on {
		return "the call gate is on in colibri's editor entry (--external-call): the editor's model can call the hosted tools, within each entry's policy and pins"
	}
	return "the call gate is off in colibri's editor entry: the editor's model can list and describe the hosted tools but not call them; " +
		"to let it call them, run import again with --external-call, or add \"--external-call\" to the entry's args (docs/import.md)"
}

// applyEach rewrites each imported server's own entry in the editor's file
// to run colibri serve --only NAME, so that the editor keeps showing,
// enabling and disabling the servers one by one. Only the entries whose
// registry entry is the one imported are rewritten: a name the registry
// held already with another definition is listed and left as it was.
func applyEach(o Options, path string, data []byte, res *editorconf.Result, added, kept []string, envFile string, w io.Writer) error {
	var differ []string
	same := slices.Clone(added)
	if len(kept) > 0 {
		reg, err := registry.Load(o.Registry)
		if err != nil {
			return fmt.Errorf("import --apply --each: %w: the editor's file is unchanged", err)
		}
		for _, e := range res.Entries {
			if !slices.Contains(kept, e.Name) {
				continue
			}
			if sameDefinition(reg, e, o.Registry) {
				same = append(same, e.Name)
			} else {
				differ = append(differ, e.Name)
			}
		}
	}
	base := colibriArgs(o, envFile)
	entries := map[string][]string{}
	var names []string
	for _, e := range res.Entries {
		if slices.Contains(same, e.Name) {
			entries[e.EditorName] = append(slices.Clip(base), "serve", "--only", e.Name)
			names = append(names, e.EditorName)
		}
	}
	if len(differ) > 0 {
		fmt.Fprintf(w, "left as they were in %s: %s: the registry holds another definition under that name (import them under another name, or remove the registry's first)\n", path, strings.Join(differ, ", "))
	}
	if len(entries) == 0 {
		fmt.Fprintf(w, "Nothing rewritten: %s is unchanged.\n", path)
		return nil
	}
	out, err := rewrite.Each(data, res.Format, entries, o.Self)
	if err != nil {
		return fmt.Errorf("import --apply --each: %s: %w: the editor's file is unchanged", path, err)
	}
	backup, err := replaceEditorFile(o, path, data, out)
	if err != nil {
		return err
	}
	slices.Sort(names)
	fmt.Fprintf(w, "rewrote %s: %s now run colibri-mcp serve --only NAME, each on its own (the previous file is kept as %s); restart the editor\n",
		path, strings.Join(names, ", "), backup)
	fmt.Fprintln(w, GateSentence(o.ExternalCall))
	return nil
}

// sameDefinition reports whether the registry's entry of e's name is the
// one e would write.
func sameDefinition(reg *registry.Registry, e *editorconf.Entry, registryPath string) bool {
	held, ok := reg.Servers[e.Name]
	if !ok {
		return false
	}
	one, err := registry.Parse(strings.NewReader(string(editorconf.Document([]*editorconf.Entry{e}))), registryPath)
	if err != nil {
		return false
	}
	a, _ := json.Marshal(held)
	b, _ := json.Marshal(one.Servers[e.Name])
	return string(a) == string(b)
}

// replaceEditorFile writes out over the editor's file at path, which must
// still hold data, keeping data as FILE.bak (the user's alone: it holds
// the secrets import moved).
func replaceEditorFile(o Options, path string, data, out []byte) (string, error) {
	if o.BeforeApply != nil {
		o.BeforeApply()
	}
	// A link (dotfiles kept in a repository) stays a link: the file it
	// points to is replaced.
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("import --apply: %w", err)
	}
	st, err := os.Stat(target)
	if err != nil {
		return "", fmt.Errorf("import --apply: %w", err)
	}
	backup, err := safefile.Backup(target, data, st.Mode().Perm()&^0o077)
	if err != nil {
		return "", fmt.Errorf("import --apply: keeping %s: %w: the editor's file is unchanged", backup, err)
	}
	if err := safefile.Replace(target, out, st.Mode().Perm(), data); err != nil {
		os.Remove(backup)
		return "", fmt.Errorf("import --apply: %s: %w", path, err)
	}
	return backup, nil
}

// importEnvFile writes the secrets moved out of the added entries.
func importEnvFile(path string, res *editorconf.Result, added []string, apply bool, w io.Writer) error {
	var names []string
	vars := map[string]string{}
	for _, m := range res.Moved {
		if slices.Contains(added, m.Server) && !slices.Contains(names, m.Name) {
			names = append(names, m.Name)
			vars[m.Name] = m.Value()
		}
	}
	if len(names) == 0 {
		fmt.Fprintf(w, "no secrets moved: %s not written\n", path)
		return nil
	}
	if err := envfile.Set(path, names, vars); err != nil {
		return fmt.Errorf("import: --env-file: %w", err)
	}
	mode := "mode 0600"
	if st, err := os.Stat(path); err == nil && st.Mode().Perm() != 0o600 {
		// A file that was there keeps its mode (group colibri may read
		// FreeBSD's provider.env): say which, never a mode it does not have.
		mode = fmt.Sprintf("mode %04o, kept", st.Mode().Perm())
		if st.Mode().Perm()&0o070 != 0 {
			mode += ": its group may read it"
		}
	}
	// Who loads it: the editor's entry (--apply's, or the one to paste,
	// both carry --env-file F) and, on the command line, only a command
	// told so: check and list-tools without it fail for want of the secrets.
	who := "the colibri entry below loads it"
	if apply {
		who = "the editor's colibri entry loads it"
	}
	abs := cmp.Or(colibriEnvFile(path), path)
	fmt.Fprintf(w, "wrote %s to %s (%s): %s; on the command line give --env-file %s, or export COLIBRI_MCP_ENV_FILE=%s\n",
		strings.Join(names, ", "), path, mode, who, abs, abs)
	return nil
}

// colibriEnvFile is the env file the editor's colibri entry loads: path as
// an absolute path (the editor starts colibri in a folder of its own), or ""
// when none was named or nothing was written to it.
func colibriEnvFile(path string) string {
	if path == "" {
		return ""
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	if _, err := os.Stat(abs); err != nil {
		return ""
	}
	return abs
}

// applyEditor rewrites the editor's file: the imported servers removed, one
// colibri entry added, the file kept as FILE.bak; refused if the file
// changed since import read it.
func applyEditor(o Options, path string, data []byte, res *editorconf.Result, imported []string, envFile string, own *editorconf.Entry, w io.Writer) error {
	var names []string
	for _, e := range res.Entries {
		if slices.Contains(imported, e.Name) {
			names = append(names, e.EditorName)
		}
	}
	args := colibriArgs(o, envFile)
	if own != nil {
		args = rewrite.KeepArgs(args, own.Args)
		if len(own.Env) > 0 {
			fmt.Fprintf(w, "note: the colibri entry's env (%s) is not carried over: it is in the backup; give colibri those settings as arguments\n", strings.Join(slices.Sorted(maps.Keys(own.Env)), ", "))
		}
	}
	out, err := rewrite.Apply(data, res.Format, names, o.Self, args)
	if err != nil {
		return fmt.Errorf("import --apply: %s: %w: the editor's file is unchanged", path, err)
	}
	backup, err := replaceEditorFile(o, path, data, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "rewrote %s: removed %s, added the %q entry (the previous file is kept as %s); restart the editor\n",
		path, strings.Join(names, ", "), editorconf.ColibriEntry, backup)
	fmt.Fprintln(w, GateSentence(slices.Contains(args, "--external-call")))
	return nil
}

// registryAccepts validates one entry as the registry would hold it; the
// error lists the registry's problems (never a value: the registry's
// messages do not repeat them).
func registryAccepts(e *editorconf.Entry, registryPath string) error {
	_, err := registry.Parse(strings.NewReader(string(editorconf.Document([]*editorconf.Entry{e}))), registryPath)
	var re *registry.Error
	if errors.As(err, &re) {
		var ps []string
		for _, p := range re.Problems {
			ps = append(ps, p.String())
		}
		return errors.New(strings.Join(ps, "; "))
	}
	return err
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// quote is a name as a JSON string.
func quote(s string) string {
	return fmt.Sprintf("%q", s)
}

// Snippet is the entry that registers colibri in the usual editors: self
// run with the registry at registryPath, gate turning calls on, envFile
// (when not "") loaded: the secrets import moved there.
func Snippet(self, registryPath string, gate bool, envFile string) string {
	args := []string{"--external-config", absPath(registryPath)}
	if gate {
		args = append(args, "--external-call")
	}
	if envFile != "" {
		args = append(args, "--env-file", envFile)
	}
	server := map[string]any{"command": self, "args": args}
	mcp, _ := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{"colibri": server}}, "", "  ")
	server["type"] = "stdio"
	vs, _ := json.MarshalIndent(map[string]any{"servers": map[string]any{"colibri": server}}, "", "  ")
	return fmt.Sprintf("Claude Desktop and Cursor (mcpServers in their JSON file):\n%s\n\nVS Code (.vscode/mcp.json):\n%s\n\n", mcp, vs)
}

// Self is colibri's own executable, for the editor entry.
func Self() string {
	if p, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	return "colibri-mcp"
}

// TransientBuild reports whether path is a binary of go run's: one Go
// deletes when the command exits (…/go-buildNNN/bNNN/exe/colibri-mcp), or
// one in Go's build cache (~/.cache/go-build/…/HASH-d/colibri-mcp), which
// the cache's trimming deletes. An editor entry naming it starts nothing,
// sooner or later.
func TransientBuild(path string) bool {
	dir := filepath.Base(filepath.Dir(path))
	return (dir == "exe" || strings.HasSuffix(dir, "-d")) && strings.Contains(path, string(filepath.Separator)+"go-build")
}

// TransientNote is the line said where an editor entry would name a
// binary of go run's.
const TransientNote = "note: colibri runs from a temporary build of 'go run', which Go deletes: the entry below names it; build it first ('make build', 'go install ./cmd/colibri-mcp') and run that\n"
