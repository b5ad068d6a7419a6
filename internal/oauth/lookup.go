package oauth

import (
	"errors"
	"fmt"

	"github.com/colibri-mcp/colibri-mcp/internal/suggest"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// FindServer reads the registry at path and finds name in it, for the auth
// commands. An unreadable or invalid registry, or an unknown name (with
// the closest one the registry has), is a *UsageError.
func FindServer(path, name string) (*registry.Server, error) {
	reg, err := (&registry.Loader{Path: path}).Load()
	if err != nil {
		return nil, &UsageError{err.Error()}
	}
	srv, ok := reg.Servers[name]
	if !ok {
		msg := fmt.Sprintf("unknown server %q in %s", name, path)
		if near := suggest.Closest(name, reg.Names()); near != "" {
			msg += fmt.Sprintf(": did you mean %q?", near)
		}
		return nil, &UsageError{msg}
	}
	return srv, nil
}

// IsUsage tells the person's mistake (a server the auth commands do not
// apply to, a bad oauth entry, a ${NAME} not set) from a login that ran and
// failed.
func IsUsage(err error) bool {
	var ue *UsageError
	var mv *registry.MissingVarError
	return errors.As(err, &ue) || errors.As(err, &mv)
}
