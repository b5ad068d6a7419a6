package registry

import (
	"fmt"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/varref"
)

// ExpandEnv returns the server's environment with ${NAME} replaced by
// getenv(NAME) and $$ by a literal $. A variable that getenv does not know is
// an error naming it (and the key that refers to it), never an empty value.
func (s *Server) ExpandEnv(getenv func(string) (string, bool)) (map[string]string, error) {
	out := make(map[string]string, len(s.Env))
	for _, key := range s.EnvKeys() {
		v, err := expand(s.Env[key], getenv)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", key, err)
		}
		out[key] = v
	}
	return out, nil
}

// ExpandRemote returns a remote server's headers and bearer token with
// ${NAME} replaced by getenv(NAME) and $$ by a literal $, as ExpandEnv does
// for env.
func (s *Server) ExpandRemote(getenv func(string) (string, bool)) (headers map[string]string, bearer string, err error) {
	headers = make(map[string]string, len(s.Headers))
	for _, key := range s.HeaderKeys() {
		v, err := expand(s.Headers[key], getenv)
		if err == nil {
			err = headerValueProblem(v)
		}
		if err != nil {
			return nil, "", fmt.Errorf("headers %s: %w", key, err)
		}
		headers[key] = v
	}
	bearer, err = expand(s.BearerToken, getenv)
	if err == nil {
		err = headerValueProblem(bearer)
	}
	if err != nil {
		return nil, "", fmt.Errorf("bearer_token: %w", err)
	}
	return headers, bearer, nil
}

// headerValueProblem refuses an expanded header value that HTTP cannot
// carry: a control character other than tab (a CR or LF would end the
// header; Go refuses the request, which would look like the server's
// fault). The value is not repeated: it is likely a secret.
func headerValueProblem(v string) error {
	if i := controlIndex(v); i >= 0 && v[i] != '\t' {
		return &ControlCharError{Char: v[i], At: i}
	}
	return nil
}

// ControlCharError is an expanded header value (or bearer token) holding a
// control character that HTTP cannot carry: a variable's value with a line
// break in it, most often. The value itself is never in the error.
type ControlCharError struct {
	Char byte // the first one
	At   int  // its byte index in the expanded value
}

func (e *ControlCharError) Error() string {
	return fmt.Sprintf("after ${NAME} expansion the value holds the control character U+%04X at byte %d, which an HTTP header cannot carry", e.Char, e.At)
}

// expand replaces ${NAME} and $$ in s. A lone $ followed by anything else is
// an error, so that a typo such as $NAME is caught instead of passed on.
func expand(s string, getenv func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	err := varref.Each(s, func(text string) { b.WriteString(text) }, func(name string) error {
		if !varref.ValidName(name) {
			return fmt.Errorf("${%s}: not a variable name", name)
		}
		v, ok := getenv(name)
		if !ok {
			return &MissingVarError{Name: name}
		}
		b.WriteString(v)
		return nil
	})
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// MissingVarError is an ${NAME} whose variable is not set in colibri's environment.
type MissingVarError struct{ Name string }

func (e *MissingVarError) Error() string {
	return fmt.Sprintf("${%s} refers to a variable that is not set in colibri's environment", e.Name)
}

// MissingVarHint is what to do about a MissingVarError: set the variable
// where colibri runs, its environment or the file --env-file loads, or
// write $$ for a literal $.
const MissingVarHint = "set the variable where colibri runs: in its environment, or as a NAME=value line in a mode-0600 file that --env-file F (COLIBRI_MCP_ENV_FILE) loads, provider.env for the FreeBSD service; or write $$ for a literal $"
