package httpserve

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/colibri-mcp/colibri-mcp/internal/reqctx"
	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
)

// A token file holds one bearer token per line, as `TOKEN` or `NAME TOKEN`
// (whitespace between); blank lines and lines starting with # are skipped.
// NAME is the caller's principal; a token without a name is the principal
// "token:" + the first 12 hex digits of its SHA-256.

var (
	// token68 is what RFC 6750 section 2.1 allows as a bearer token.
	token68 = regexp.MustCompile(`^[A-Za-z0-9\-._~+/]+=*$`)
	// principalName keeps names plain in logs and policy; ':' is left out so
	// that no name can pass for a "token:…" principal.
	principalName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)
)

// reservedNames are principals colibri gives itself.
var reservedNames = map[string]bool{reqctx.Stdio: true, AnonymousPrincipal: true}

// credential is one line of the token file. Only the token's SHA-256 is
// kept, and compared: comparing tokens themselves in constant time still
// takes a time that tells their length (subtle.ConstantTimeCompare returns
// at once when the lengths differ).
type credential struct {
	digest    [sha256.Size]byte
	principal string
}

// tokenSet is the credentials of the token file, replaced whole on reload.
type tokenSet struct {
	creds atomic.Pointer[[]credential]
}

// load reads the file; any line that cannot be a credential is an error that
// names the file and the line, and the tokens in force stay as they were. A
// file with no token is an error too: it would lock everyone out.
func (t *tokenSet) load(path string) error {
	creds, err := parseTokenFile(path)
	if err != nil {
		return err
	}
	t.creds.Store(&creds)
	return nil
}

func parseTokenFile(path string) ([]credential, error) {
	// Never wait in open(2) for a FIFO's writer: SIGHUP reloads this file.
	f, err := safefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		creds    []credential
		problems []error
		seen     = map[string]int{} // token → line
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 {
			// A byte order mark, as some Windows editors write one.
			line = strings.TrimPrefix(line, "\ufeff")
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) {
			problems = append(problems, fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, args...)))
		}
		var name, token string
		switch fields := strings.Fields(line); len(fields) {
		case 1:
			token = fields[0]
		case 2:
			name, token = fields[0], fields[1]
		default:
			// Never echo the line: it holds a token.
			if slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, "#") }) {
				bad("%d words; a line is TOKEN or NAME TOKEN, and a comment is a line of its own starting with #", len(fields))
			} else {
				bad("%d words; a line is TOKEN or NAME TOKEN (a bearer token has no spaces)", len(fields))
			}
			continue
		}
		if !token68.MatchString(token) {
			bad("the token has characters a bearer token cannot hold (RFC 6750: letters, digits and -._~+/, then = padding)")
			continue
		}
		if name == "" {
			sum := sha256.Sum256([]byte(token))
			name = "token:" + hex.EncodeToString(sum[:])[:12]
		} else if !principalName.MatchString(name) {
			bad("name %q: want letters, digits and _.@- (at most 64, starting with a letter or digit)", name)
			continue
		} else if reservedNames[name] {
			bad("name %q is reserved for colibri's own principals", name)
			continue
		}
		if prev, ok := seen[token]; ok {
			bad("the same token as line %d", prev)
			continue
		}
		seen[token] = n
		creds = append(creds, credential{digest: sha256.Sum256([]byte(token)), principal: name})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if len(creds) == 0 {
		return nil, fmt.Errorf("%s holds no token", path)
	}
	return creds, nil
}

// principal is the principal of token, or "" when no line holds it. Every
// line is compared, in constant time and by digest, so that timing tells
// nothing of the tokens, not even their length.
func (t *tokenSet) principal(token string) string {
	creds := t.creds.Load()
	if creds == nil {
		return ""
	}
	digest := sha256.Sum256([]byte(token))
	found := -1
	for i, c := range *creds {
		if subtle.ConstantTimeCompare(digest[:], c.digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return ""
	}
	return (*creds)[found].principal
}
