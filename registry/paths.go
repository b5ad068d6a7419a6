package registry

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
)

// UserPath is the per-user registry (docs/registry.md#settings):
// $XDG_CONFIG_HOME/colibri/external-mcp.json, or
// ~/.config/colibri/external-mcp.json; "" when neither variable is set (or
// holds a relative path, which the XDG spec says to ignore).
func UserPath(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "colibri", "external-mcp.json")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".config", "colibri", "external-mcp.json")
	}
	return ""
}

// Default is the registry colibri reads when none is named: for a user
// other than root, the per-user file when it exists, else the system one
// (DefaultPath). tried lists what was looked at, in order, for the error
// about a missing registry.
func Default(root bool, getenv func(string) string, exists func(string) bool) (path string, tried []string) {
	if !root {
		if u := UserPath(getenv); u != "" {
			if exists(u) {
				return u, []string{u}
			}
			tried = append(tried, u)
		}
	}
	return DefaultPath, append(tried, DefaultPath)
}

// missingProblem is the message for a registry that is not there: the paths
// tried (when more than the one named) and the commands that make one.
func missingProblem(tried []string) string {
	m := "the registry file does not exist"
	if len(tried) > 1 {
		m += " (tried " + strings.Join(tried, ", then ") + ")"
	}
	return m + ": `colibri-mcp init` writes a starter one, `colibri-mcp import` converts an editor's MCP configuration (or name one with --external-config / COLIBRI_MCP_EXTERNAL_CONFIG)"
}

// IsMissing reports whether err is a registry file that does not exist.
func IsMissing(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Public is the error as a caller over HTTP may read it: the file's name
// without its folder, and no path of the server's in a message (the paths a
// missing registry was looked for at are left out). The operator's log
// keeps the error itself.
func (e *Error) Public() *Error {
	cp := *e
	cp.File = filepath.Base(e.File)
	if e.File == "" {
		cp.File = ""
	}
	dir := filepath.Dir(e.File)
	cp.Problems = make([]Problem, len(e.Problems))
	for i, p := range e.Problems {
		switch {
		case IsMissing(e.Err):
			p.Message = missingProblem(nil)
		case dir != "." && dir != "/" && e.File != "":
			p.Message = strings.ReplaceAll(p.Message, dir+string(filepath.Separator), "")
		}
		cp.Problems[i] = p
	}
	return &cp
}

// PublicError is err with Public applied to a registry error in it; any
// other error is returned as it is.
func PublicError(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e.Public()
	}
	return err
}
