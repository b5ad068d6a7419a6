package main

// colibri-mcp import: an editor's MCP configuration into the registry
// (CONTRACT.md section 12). internal/editorconf reads the editor's file;
// this file finds it, prints what it found, and merges it into the
// registry: validated by the registry itself before anything is written,
// the old file kept as FILE.bak, the new one put in place by a rename.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/editorconf"
	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

const importDescription = "Reads the MCP servers of Claude Desktop or Cursor (\"mcpServers\"), VS Code (\"servers\"),\n" +
	"Zed (\"context_servers\") or Codex ([mcp_servers.NAME] in config.toml), from FILE or from the\n" +
	"editor's usual place (--from), and prints the registry entries they become. Without --from,\n" +
	"the editor is told from FILE's content. --json prints them as a registry document; --write\n" +
	"merges them into the registry (--external-config): the old file is kept as FILE.bak, and a\n" +
	"name the registry has already is reported, never overwritten.\n\n" +
	"A literal value in env or headers whose name looks secret (*TOKEN*, *KEY*, *SECRET*,\n" +
	"*PASSWORD*, *AUTH*, …) becomes ${NAME} and is listed as \"moved to environment\": set NAME in\n" +
	"colibri's environment (provider.env for the FreeBSD service). Values are never printed.\n\n" +
	"Examples:\n" +
	"  colibri-mcp import --from cursor\n" +
	"  colibri-mcp import ~/.config/zed/settings.json --json > imported.json\n" +
	"  colibri-mcp --external-config ~/.config/colibri/external-mcp.json import --from codex --write"

func importFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "from", Usage: "the `EDITOR`: " + strings.Join(editorconf.FormatNames(), ", ") + " (without FILE: read its usual file)"},
		&cli.BoolFlag{Name: "write", Usage: "merge the entries into the registry (--external-config), keeping the old file as FILE.bak"},
		&cli.BoolFlag{Name: "json", Usage: "print the entries as a registry document"},
	}
}

// importOptions are import's arguments, checked.
type importOptions struct {
	file  string
	from  editorconf.Format // "" when the file's content tells
	write bool
	json  bool
}

func importOptionsFrom(cmd *cli.Command) (importOptions, error) {
	o := importOptions{file: cmd.Args().First(), write: cmd.Bool("write"), json: cmd.Bool("json")}
	bad := func(format string, a ...any) (importOptions, error) {
		return importOptions{}, usage(fmt.Errorf("import: "+format+" (%s)", append(a, helpHint(cmd))...))
	}
	editors := strings.Join(editorconf.FormatNames(), ", ")
	if cmd.IsSet("from") {
		from := cmd.String("from")
		if !slices.Contains(editorconf.FormatNames(), from) {
			if near := suggest.Closest(from, editorconf.FormatNames()); near != "" {
				return bad("--from %q: did you mean %q?", from, near)
			}
			return bad("--from %q: want one of %s", from, editors)
		}
		o.from = editorconf.Format(from)
	}
	switch {
	case o.file == "" && o.from == "":
		return bad("give the editor's FILE, or --from EDITOR (%s) to read its usual file", editors)
	case o.write && o.json:
		return bad("--json prints the entries and --write merges them into the registry: give one")
	}
	return o, nil
}

// maxEditorFile bounds what import reads: editors' files are kilobytes, and
// a mistaken path (/dev/zero) must not exhaust memory.
const maxEditorFile = 4 << 20

func cmdImport(_ context.Context, s *settings, o importOptions, stdout, stderr io.Writer) error {
	stdout, stderr = safe(stdout), safe(stderr) // names and values from another program's file
	env := envLookup(s.environ)
	getenv := func(k string) string { v, _ := env(k); return v }
	home := getenv("HOME")
	path := o.file
	if path == "" {
		cwd, _ := os.Getwd()
		candidates := editorconf.Locations(o.from, runtime.GOOS, home, cwd, getenv)
		for _, c := range candidates {
			if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
				path = c
				break
			}
		}
		if path == "" {
			return usage(fmt.Errorf("import: no %s configuration at %s: give its FILE", o.from.Describe(), strings.Join(candidates, " nor ")))
		}
	}
	data, err := readEditorFile(path)
	if err != nil {
		return usage(fmt.Errorf("import: %s: %w", path, err))
	}
	if err := duplicateKeys(path, data); err != nil {
		return usage(err)
	}
	format := o.from
	if format == "" {
		if format, err = editorconf.Detect(data, path); err != nil {
			var de *editorconf.DetectError
			if errors.As(err, &de) {
				return usage(fmt.Errorf("import: %s: cannot tell which editor's file this is: %s: give --from %s (see 'colibri-mcp import --help')",
					path, de.Reason, strings.Join(editorconf.FormatNames(), "|")))
			}
			return usage(fmt.Errorf("import: %s: %w", path, err))
		}
	}
	abs, _ := filepath.Abs(path)
	res, err := editorconf.Parse(data, format, editorconf.Options{Home: home, Workspace: editorconf.WorkspaceOf(abs)})
	if err != nil {
		return usage(fmt.Errorf("import: %s: %w", path, err))
	}
	switch {
	case o.json:
		if _, err := stdout.Write(editorconf.Document(res.Entries)); err != nil {
			return failed(err)
		}
		fmt.Fprintf(stderr, "%s, %s: %s\n", path, res.Format.Describe(), count(len(res.Entries), "server"))
		printFindings(stderr, res, nil)
		return nil
	case o.write:
		return importWrite(s.configPath, path, res, stdout)
	}
	printImport(stdout, path, res, s.configPath)
	return nil
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

// readEditorFile reads a regular file of at most maxEditorFile bytes; a
// FIFO or a device is refused, never waited on.
func readEditorFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, errors.Unwrap(err) // the path is named by the caller
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, errors.Unwrap(err)
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
	printFindings(w, res, nil)
	if len(res.Entries) == 0 {
		fmt.Fprintln(w, "Nothing to import.")
		return
	}
	fmt.Fprintf(w, "Nothing written: --write merges these into %s.\n", registryPath)
}

// printFindings lists the secrets moved, the notes, and the variables the
// entries read from colibri's environment; with only set, for those
// entries alone.
func printFindings(w io.Writer, res *editorconf.Result, only []string) {
	in := func(server string) bool { return only == nil || slices.Contains(only, server) }
	for _, m := range res.Moved {
		if in(m.Server) {
			fmt.Fprintln(w, m)
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintln(w, "note:", n)
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
		fmt.Fprintf(w, "colibri reads from its environment: %s (set them where colibri runs: the env of its editor entry, or provider.env for the FreeBSD service)\n", strings.Join(vars, ", "))
	}
}

// importWrite merges the entries into the registry at registryPath. Each
// entry, and then the merged document, must pass registry.Parse before
// anything is written; an entry the registry refuses is reported and left
// out.
func importWrite(registryPath, source string, res *editorconf.Result, w io.Writer) error {
	// A registry that is a link: the file it points to is replaced, and
	// the link stays.
	target, err := filepath.EvalSymlinks(registryPath)
	if errors.Is(err, fs.ErrNotExist) {
		// No registry yet (it is created), unless the path is a link to
		// nothing: creating its target somewhere unseen would surprise.
		target, err = registryPath, nil
		if _, lerr := os.Lstat(registryPath); lerr == nil {
			return usage(fmt.Errorf("import: the registry %s is a link to nothing: nothing written", registryPath))
		}
	}
	if err != nil {
		return usage(fmt.Errorf("import: the registry %s: %w", registryPath, err))
	}
	old, mode, err := readRegistryFile(target)
	if err != nil {
		return usage(fmt.Errorf("import: the registry %s: %w: nothing written", registryPath, err))
	}
	if old != nil {
		if _, err := registry.Parse(bytes.NewReader(old), registryPath); err != nil {
			return usage(fmt.Errorf("import: the registry is invalid, nothing written (fix it first): %w", err))
		}
	}
	var accepted []*editorconf.Entry
	var refused []string
	for _, e := range res.Entries {
		err := registryAccepts(e, registryPath)
		switch {
		case err == nil:
			accepted = append(accepted, e)
		default:
			refused = append(refused, fmt.Sprintf("not written: %s: the registry refuses it: %v", e.Name, err))
		}
	}
	merged, added, kept, err := editorconf.Merge(old, accepted)
	if err != nil {
		return usage(fmt.Errorf("import: the registry %s: %w: nothing written", registryPath, err))
	}
	if len(added) > 0 {
		if _, err := registry.Parse(bytes.NewReader(merged), registryPath); err != nil {
			return failed(fmt.Errorf("import: internal: the merged registry would be invalid, nothing written: %w", err))
		}
	}
	fmt.Fprintf(w, "%s, %s: %s\n", source, res.Format.Describe(), count(len(res.Entries), "server"))
	if len(kept) > 0 {
		fmt.Fprintf(w, "kept: %s: the registry has these names already; not overwritten\n", strings.Join(kept, ", "))
	}
	for _, r := range refused {
		fmt.Fprintln(w, r)
	}
	if len(added) == 0 {
		printFindings(w, res, []string{})
		fmt.Fprintf(w, "Nothing written: %s is unchanged.\n", registryPath)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return failed(fmt.Errorf("import: %w: nothing written", err))
	}
	backup := ""
	if old != nil {
		if backup, err = keepBackup(target, old, mode); err != nil {
			return failed(fmt.Errorf("import: keeping the old registry as %s: %w: nothing written", backup, err))
		}
	}
	if err := writeAtomic(target, merged, mode, func() error { return stillHolds(target, old) }); err != nil {
		if backup != "" {
			os.Remove(backup) // nothing was written: it keeps nothing
		}
		return failed(fmt.Errorf("import: writing %s: %w", registryPath, err))
	}
	fmt.Fprintf(w, "added to %s: %s\n", registryPath, strings.Join(added, ", "))
	if backup != "" {
		fmt.Fprintf(w, "the previous registry is kept as %s\n", backup)
	}
	printFindings(w, res, added)
	return nil
}

// registryAccepts validates one entry as the registry would hold it; the
// error lists the registry's problems (never a value: the registry's
// messages do not repeat them).
func registryAccepts(e *editorconf.Entry, registryPath string) error {
	_, err := registry.Parse(bytes.NewReader(editorconf.Document([]*editorconf.Entry{e})), registryPath)
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

// readRegistryFile reads the registry as it is, and its mode; a registry
// that does not exist yet is nil, to be created with mode 0644 (it holds
// references to secrets, never secrets).
func readRegistryFile(path string) ([]byte, fs.FileMode, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o644, nil
	}
	if err != nil {
		return nil, 0, errors.Unwrap(err)
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	if st.Size() > registry.MaxFileSize {
		return nil, 0, fmt.Errorf("larger than %d bytes", registry.MaxFileSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, errors.Unwrap(err)
	}
	return data, st.Mode().Perm(), nil
}

// keepBackup keeps data, the registry import is about to replace, beside
// it: as FILE.bak, or, when that exists already (kept by an earlier
// import: the user's registry as it was before the first), as FILE.bak.1,
// FILE.bak.2, …, the first name free. No backup is ever overwritten, so the
// user's original survives every later import. It returns the name used.
func keepBackup(target string, data []byte, mode fs.FileMode) (string, error) {
	for n := 0; ; n++ {
		name := target + ".bak"
		if n > 0 {
			name += "." + strconv.Itoa(n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return name, err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Chmod(mode) // O_CREATE's mode is less the umask
		}
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
		}
		return name, err
	}
}

// errRegistryChanged is an edit of the registry made while import ran:
// writing would lose it.
var errRegistryChanged = errors.New("the registry changed while import ran (was it being edited?): nothing written; run import again")

// stillHolds checks that path still holds data (nil: that it does not
// exist), as when import read it.
func stillHolds(path string, data []byte) error {
	now, err := os.ReadFile(path)
	switch {
	case data == nil && errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case err != nil || !bytes.Equal(now, data):
		return errRegistryChanged
	}
	return nil
}

// writeAtomic replaces path with data: a temporary file in the same folder,
// given mode, synced, then renamed over path. colibri reads the registry on
// every request: it sees the old file or the new one, never a part. check,
// when not nil, runs just before the rename; its error leaves path as it
// is.
func writeAtomic(path string, data []byte, mode fs.FileMode, check func() error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if check != nil {
		if err = check(); err != nil {
			return err
		}
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	// The rename itself lasts once the folder is synced.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
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
