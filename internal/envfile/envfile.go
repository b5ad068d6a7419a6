// Package envfile reads and writes env files: NAME=value lines that give
// colibri the values of the registry's ${NAME} references (serve
// --env-file, COLIBRI_MCP_ENV_FILE, import --env-file). No shell reads them
// here: nothing is expanded, nothing runs. The lines written are also valid
// sh(1), since FreeBSD's rc.subr sources provider.env.
//
//	vars, err := envfile.Load("/usr/local/etc/colibri/provider.env")
//	environ = append(environ, vars...) // NAME=value, file order
package envfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
	"github.com/colibri-mcp/colibri-mcp/internal/varref"
)

// MaxSize bounds an env file (1 MiB): a few secrets, not a data store.
const MaxSize = 1 << 20

// ErrReadable is an env file that users other than its owner and group may
// read: it holds secrets.
var ErrReadable = errors.New("readable by others: it holds secrets (chmod 600, or 640 with a group of the user colibri runs as)")

// Load reads path: each line NAME=value (a value in single quotes is taken
// without them, as sh(1) would; nothing else is interpreted), blank lines
// and # comments skipped, an optional "export " before NAME. A file that
// others may read, or that is not a regular file, is refused before a byte
// is read.
func Load(path string) ([]string, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o007 != 0 {
		return nil, fmt.Errorf("%s: %w", path, ErrReadable)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, MaxSize)
	}
	vars, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vars, nil
}

// Parse reads env-file lines into NAME=value strings, in file order. An
// error names the line (never its value).
func Parse(data []byte) ([]string, error) {
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		if !ok || !varref.ValidName(name) {
			return nil, fmt.Errorf("line %d: want NAME=value, NAME a variable name", i+1)
		}
		if len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'' {
			value = value[1 : len(value)-1]
			if strings.Contains(value, "'") {
				return nil, fmt.Errorf("line %d (%s): a quote inside a quoted value", i+1, name)
			}
		} else if strings.ContainsAny(value, shellSpecial) {
			return nil, fmt.Errorf("line %d (%s): quotes, spaces and %s need the whole value in single quotes ('…'): sh(1) reads this file too (FreeBSD's provider.env), and would read them otherwise", i+1, name, "$ \\ ; & | < > ( ) ~ `")
		}
		out = append(out, name+"="+value)
	}
	return out, nil
}

// shellSpecial are the characters sh(1) would treat otherwise than as text
// in an unquoted assignment value.
const shellSpecial = "'\"`$\\ \t;&|<>()~"

// line is NAME=value as Parse (and sh) read it back.
func line(name, value string) (string, error) {
	switch {
	case !varref.ValidName(name):
		return "", fmt.Errorf("%q is not a variable name", name)
	case strings.ContainsAny(value, "'\n\r\x00"):
		return "", fmt.Errorf("the value of %s holds a quote or a line break: set it by hand", name)
	case value != "" && strings.Trim(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.:/+=@,%") == "":
		return name + "=" + value, nil
	}
	return name + "='" + value + "'", nil
}

// Set writes vars (name → value, in names' order) into the env file at
// path, mode 0600: a name the file holds is replaced on its line, the others
// appended; every other line stays as it is. A file others may read is
// refused, untouched.
func Set(path string, names []string, vars map[string]string) error {
	old, mode, err := safefile.ReadWithMode(path, MaxSize)
	if err != nil {
		return err
	}
	if old != nil && mode&0o007 != 0 {
		return fmt.Errorf("%s: %w: nothing written", path, ErrReadable)
	}
	if old != nil {
		if _, err := Parse(old); err != nil {
			return fmt.Errorf("%s: %w: nothing written", path, err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(old), "\n"), "\n")
	if old == nil {
		lines = nil
	}
	for _, n := range names {
		l, err := line(n, vars[n])
		if err != nil {
			return fmt.Errorf("%s: %w: nothing written", path, err)
		}
		i := -1
		for j, have := range lines {
			h := strings.TrimPrefix(strings.TrimSpace(have), "export ")
			if strings.HasPrefix(h, n+"=") {
				i = j
			}
		}
		if i >= 0 {
			lines[i] = l
		} else {
			lines = append(lines, l)
		}
	}
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if old == nil {
		mode = 0o600
	}
	if err := safefile.Replace(path, b.Bytes(), mode&0o770, old); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: its folder does not exist: %w", path, err)
		}
		return err
	}
	return nil
}

// CheckPrivate refuses an env file that exists and others may read; a file
// that does not exist yet is fine (Set creates it, mode 0600).
func CheckPrivate(path string) error {
	_, mode, err := safefile.ReadWithMode(path, MaxSize)
	if err != nil {
		return err
	}
	if mode&0o007 != 0 {
		return fmt.Errorf("%s: %w", path, ErrReadable)
	}
	return nil
}
