package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"

	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
)

// Args is how a call's arguments appear in the log: a digest of their
// canonical JSON, and its length in bytes. Two calls with the same
// arguments, however they were spaced or ordered, have the same digest.
type Args struct {
	Digest string `json:"digest"`
	Bytes  int    `json:"bytes"`
}

// Digester digests arguments: with HMAC-SHA-256 under a key, or with plain
// SHA-256 when there is none.
type Digester struct {
	key []byte
}

// NewDigester digests with HMAC-SHA-256 under key, or with SHA-256 when key
// is empty. Without a key a digest can be reversed by anyone who can guess
// the arguments (a short value, a known file path): the key keeps the log's
// readers from testing guesses.
func NewDigester(key []byte) *Digester { return &Digester{key: bytes.Clone(key)} }

// Keyed reports whether digests are HMACs.
func (d *Digester) Keyed() bool { return len(d.key) > 0 }

// Digest is the digest and size of raw's canonical JSON (Canonical). No
// arguments (empty or null) are the empty object, as colibri passes them
// on. Arguments that are not JSON at all are digested as they are. The
// canonical bytes go straight into the hash: digesting holds little more
// than the arguments themselves, however large they are.
func (d *Digester) Digest(raw json.RawMessage) Args {
	var h hash.Hash
	prefix := "sha256:"
	if d.Keyed() {
		h, prefix = hmac.New(sha256.New, d.key), "hmac-sha256:"
	} else {
		h = sha256.New()
	}
	n, err := writeCanonical(h, raw)
	if err != nil {
		h.Reset()
		n, _ = h.Write(raw)
	}
	return Args{Digest: prefix + hex.EncodeToString(h.Sum(nil)), Bytes: n}
}

// maxKeyBytes bounds a key file: a key is a few dozen bytes.
const maxKeyBytes = 64 << 10

// LoadKey reads the HMAC key of --audit-key-file: the file's bytes, less
// surrounding whitespace (a key written with `openssl rand -hex 32 >FILE`
// ends with a newline). warning is set when the file is readable by group
// or others, who could then test guesses against the log's digests.
func LoadKey(path string) (key []byte, warning string, err error) {
	f, err := safefile.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("--audit-key-file / COLIBRI_MCP_AUDIT_KEY_FILE: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("--audit-key-file / COLIBRI_MCP_AUDIT_KEY_FILE: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, "", fmt.Errorf("--audit-key-file / COLIBRI_MCP_AUDIT_KEY_FILE: %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("--audit-key-file / COLIBRI_MCP_AUDIT_KEY_FILE: reading %s: %w", path, err)
	}
	if len(b) > maxKeyBytes {
		return nil, "", fmt.Errorf("--audit-key-file / COLIBRI_MCP_AUDIT_KEY_FILE: %s is larger than %d bytes; a key is a few dozen", path, maxKeyBytes)
	}
	key = bytes.TrimSpace(b)
	if len(key) == 0 {
		return nil, "", fmt.Errorf("--audit-key-file / COLIBRI_MCP_AUDIT_KEY_FILE: %s is empty", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		warning = fmt.Sprintf("the audit key file %s is readable by group or others (mode %04o): whoever reads it can test guesses of arguments against the audit log; chmod 600 it", path, st.Mode().Perm())
	}
	return key, warning, nil
}
