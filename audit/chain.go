package audit

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"strings"
)

// Genesis is the prev of a chain's first line.
const Genesis = "genesis"

// HeadEvery is how many lines pass between two heads told to OnHead.
const HeadEvery = 1000

// Head is where a chain stands: its id, the lines it holds (written by this
// process, across reopens) and the digest of the last one ("" before the
// first), in the form the next line's prev takes.
type Head struct {
	Chain string
	Lines int64
	Last  string
}

// chain is one process's hash chain over the lines it writes (docs/
// operations.md#a-tamper-evident-log): each line's prev is the digest of
// the line this process wrote before it, in whichever file that went (so a
// SIGHUP reopen after newsyslog's rotation continues the chain into the new
// file), "genesis" for its first. Several processes appending to one file
// each keep their own, told apart by the id.
type chain struct {
	id    string
	key   []byte // nil: SHA-256
	lines int64
	last  string // the digest of the last line written, "" before the first
}

func newChain(opts Options) (chain, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return chain{}, fmt.Errorf("drawing the audit chain's id: %w", err)
	}
	id := fmt.Sprintf("%s:%d:%s", opts.Instance, os.Getpid(), hex.EncodeToString(b[:]))
	if opts.Key != nil {
		id += "." + chainTag(opts.Key, id)
	}
	return chain{id: id, key: opts.Key}, nil
}

// chainTag seals a keyed chain's id: its random value ends with a tag, an
// HMAC of the rest of the id under the key, so that nobody without the key
// can start a chain of their own in the file (a "genesis" line is the
// contract's and is not keyed itself). verify checks it for every chain.
func chainTag(key []byte, id string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("colibri-audit-chain\x00" + id))
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// sealed reports whether a keyed chain's id carries its tag.
func sealed(key []byte, id string) bool {
	i := strings.LastIndexByte(id, '.')
	return i > 0 && hmac.Equal([]byte(id[i+1:]), []byte(chainTag(key, id[:i])))
}

func (c *chain) prev() string {
	if c.last == "" {
		return Genesis
	}
	return c.last
}

// wrote records line (without its newline) as the chain's last, and says
// whether the head is due to be told.
func (c *chain) wrote(line []byte) (Head, bool) {
	c.last = LineDigest(c.key, line)
	c.lines++
	return c.head(), c.lines%HeadEvery == 0
}

func (c *chain) head() Head { return Head{Chain: c.id, Lines: c.lines, Last: c.last} }

// LineDigest is the prev a line's successor carries: "sha256:" and the
// SHA-256 of the line's bytes (without its newline) in lowercase hex, or
// with a key "hmac-sha256:" and that HMAC under the key.
func LineDigest(key, line []byte) string {
	var h hash.Hash
	prefix := "sha256:"
	if key != nil {
		h, prefix = hmac.New(sha256.New, key), "hmac-sha256:"
	} else {
		h = sha256.New()
	}
	h.Write(line)
	return prefix + hex.EncodeToString(h.Sum(nil))
}
