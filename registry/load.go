package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
	"github.com/colibri-mcp/colibri-mcp/policy"
)

// Load reads and validates the registry file at path. It reads a regular
// file only, of at most MaxFileSize bytes: a FIFO, a device or a directory
// at path is refused at once, never waited on.
func Load(path string) (*Registry, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f, path)
}

// openRegular opens path for reading if it is, or links to, a regular file
// of at most MaxFileSize bytes (safefile.OpenFollowing: a FIFO, a device or
// a directory is refused at once, never opened or waited on).
func openRegular(path string) (*os.File, error) {
	f, err := safefile.OpenFollowing(path)
	if err == nil {
		if err = sizeOK(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, &Error{File: path, Problems: []Problem{{Message: readProblem(err)}}, Err: err}
	}
	return f, nil
}

// sizeOK refuses an open registry file of more than MaxFileSize bytes.
func sizeOK(f *os.File) error {
	st, err := f.Stat()
	if err == nil {
		err = regular(st)
	}
	return err
}

// regular says why a registry file of that stat is refused (not a regular
// file, or larger than MaxFileSize), or nil: what the Loader's stat checks
// before each read.
func regular(st os.FileInfo) error {
	if err := safefile.Regular(st); err != nil {
		return err
	}
	if st.Size() > MaxFileSize {
		return fmt.Errorf("%w: %d bytes, more than the limit of %d", errTooLarge, st.Size(), MaxFileSize)
	}
	return nil
}

var errTooLarge = errors.New("the registry file is too large")

func readProblem(err error) string {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return missingProblem(nil)
	case errors.Is(err, os.ErrPermission):
		return "the registry file cannot be read: permission denied"
	case errors.Is(err, safefile.ErrNotRegular):
		return "the registry path is " + err.Error()
	case errors.Is(err, errTooLarge):
		return err.Error()
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return "reading the registry file: " + pe.Err.Error()
	}
	return "reading the registry file: " + err.Error()
}

// MaxFileSize bounds what Parse reads (4 MiB): a registry is a few
// kilobytes, and a hostile or mistaken file must not exhaust memory.
const MaxFileSize = 4 << 20

// Parse reads a registry from r. path names the file in errors and is the
// folder that relative commands resolve against; it may be "" for a reader
// with no file behind it, and then relative commands resolve against the
// working directory.
func Parse(r io.Reader, path string) (*Registry, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Problems: []Problem{{Message: "reading the registry: " + err.Error()}}, Err: err}
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Problems: []Problem{{Message: fmt.Sprintf("the registry is larger than %d bytes", MaxFileSize)}}}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, &Error{File: path, Problems: []Problem{{Message: syntaxProblem(data, err)}}, Err: err}
	}
	if dups := duplicateKeys(data); len(dups) > 0 {
		return nil, &Error{File: path, Problems: dups}
	}
	if err := compiled.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, &Error{File: path, Problems: []Problem{{Message: err.Error()}}, Err: err}
		}
		problems := append(nameProblems(doc), schemaProblems(ve, true)...)
		slices.SortStableFunc(problems, func(a, b Problem) int { return strings.Compare(a.Location, b.Location) })
		if shape := editorShape(doc); shape != "" {
			problems = append([]Problem{{Message: fmt.Sprintf("this looks like an editor's MCP configuration (%s), not a colibri registry: `colibri-mcp import` converts one into registry entries", shape)}}, problems...)
		}
		return nil, &Error{File: path, Problems: problems}
	}

	var file struct {
		Servers map[string]*Server `json:"servers"`
		Policy  *policy.Policy     `json:"policy"`
		Sandbox *Sandbox           `json:"sandbox"`
		Pin     string             `json:"pin"`
		PinScan string             `json:"pin_scan"`
		PassEnv []string           `json:"pass_env"`
	}
	var policies struct {
		Servers map[string]struct {
			Policy       *policy.Policy `json:"policy"`
			Pin          string         `json:"pin"`
			PinResources bool           `json:"pin_resources"`
			PinScan      string         `json:"pin_scan"`
		} `json:"servers"`
	}
	var raw struct {
		Servers map[string]map[string]json.RawMessage `json:"servers"`
		Sandbox json.RawMessage                       `json:"sandbox"`
	}
	err = json.Unmarshal(data, &file)
	if err == nil {
		err = json.Unmarshal(data, &policies)
	}
	if err == nil {
		err = json.Unmarshal(data, &raw)
	}
	if err != nil {
		// The schema accepted the document, so this is a mismatch between the
		// schema and the Go types: a bug of ours, reported as such.
		return nil, &Error{File: path, Problems: []Problem{{Message: "internal: decoding a valid registry: " + err.Error()}}, Err: err}
	}
	reg := &Registry{Path: path, Servers: file.Servers, Policy: file.Policy, Sandbox: file.Sandbox, Pin: file.Pin, PinScan: file.PinScan, PassEnv: file.PassEnv}
	if reg.Servers == nil {
		reg.Servers = map[string]*Server{}
	}
	for name, s := range reg.Servers {
		s.Name = name
		s.Policy = policies.Servers[name].Policy
		s.Pin = policies.Servers[name].Pin
		s.PinResources = policies.Servers[name].PinResources
		s.PinScan = policies.Servers[name].PinScan
		s.fingerprint = fingerprint(raw.Servers[name], raw.Sandbox)
		if s.PassEnv == nil {
			s.PassEnv = file.PassEnv
		}
		s.resolve(path)
		s.applySandbox(file.Sandbox, registryDir(path))
	}
	var tokens []string
	for _, s := range reg.Servers {
		if s.OAuth != nil && filepath.IsAbs(s.OAuth.TokenFile) {
			tokens = append(tokens, filepath.Clean(s.OAuth.TokenFile))
		}
	}
	slices.Sort(tokens)
	for _, s := range reg.Servers {
		s.TokenFiles = tokens
	}
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	return reg, nil
}

// resolve makes a relative command (one with a "/") and a relative cwd
// absolute, against the folder of the registry file. A jailed server's
// paths are inside the jail and stay as they are.
func (s *Server) resolve(file string) {
	if s.Jail != nil {
		return
	}
	dir := "."
	if file != "" {
		dir = filepath.Dir(file)
		if abs, err := filepath.Abs(dir); err == nil && s.URL == "" {
			s.Dir = abs
		}
	}
	if !filepath.IsAbs(s.Command) && strings.Contains(s.Command, "/") {
		if abs, err := filepath.Abs(filepath.Join(dir, s.Command)); err == nil {
			s.Command = abs
		}
	}
	if s.Cwd != "" && !filepath.IsAbs(s.Cwd) {
		if abs, err := filepath.Abs(filepath.Join(dir, s.Cwd)); err == nil {
			s.Cwd = abs
		}
	}
}
