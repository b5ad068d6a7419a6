package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Source is one file for Verify: its name (as the report says it) and its
// lines, uncompressed.
type Source struct {
	Name string
	R    io.Reader
}

// MaxLine bounds one line Verify reads: an audit line is a few hundred bytes
// (every name it repeats is clipped), so a longer one is not an audit log.
const MaxLine = 1 << 20

// Report is what Verify found in whole files.
type Report struct {
	Lines     int      // chained audit lines verified
	Chains    int      // chains seen (one per colibri process)
	Unchained int      // audit lines written before the chain (older colibri), before the first chained one
	Skipped   int      // lines that are not audit lines (colibri's log lines sharing stderr), skipped
	MidChain  []string // where a chain starts mid-way (its start rotated away): "FILE line N (chain ID)"
	// Torn are the torn writes found (torn.go): a line colibri began and
	// did not finish, ended by the line after it, which records it (or
	// the last line of the last file, unfinished), in no chain:
	// "FILE line N (B bytes, …)".
	Torn []string
	// Heads are where each chain ends in the files, in the order first
	// seen, as colibri logs its head ("audit chain head"): a logged head
	// with more lines, or another last digest, is a truncated tail.
	Heads []Head
}

// Break is where the chain first breaks: between line FromLine of FromFile
// (the last good line of that chain; 0 when none) and line Line of File.
type Break struct {
	FromFile string
	FromLine int
	File     string
	Line     int
	Reason   string
}

func (b *Break) Error() string {
	if b.FromFile == b.File {
		return fmt.Sprintf("%s: the chain breaks between lines %d and %d: %s", b.File, b.FromLine, b.Line, b.Reason)
	}
	return fmt.Sprintf("the chain breaks between %s line %d and %s line %d: %s", b.FromFile, b.FromLine, b.File, b.Line, b.Reason)
}

// ErrNeedKey is a keyed chain verified without the key.
var ErrNeedKey = errors.New("the chain is keyed (hmac-sha256): give the key with --audit-key-file")

// ErrKeyless is an unkeyed chain verified with a key: whoever edited the log
// could have rebuilt it.
var ErrKeyless = errors.New("the chain is not keyed (sha256) though a key was given: it may have been rebuilt by whoever edited the log")

// link is where one chain stands while it is followed.
type link struct {
	file   string
	line   int
	digest string
	lines  int64
}

// Verify follows every chain through the sources, in the order written
// (rotated files first), and returns the first break as a *Break. key is
// the --audit-key-file key (nil: the chains must be plain SHA-256). A
// chain's first line must be "genesis", except in the first source, where
// a start rotated away is reported (MidChain) rather than failed. Audit
// lines without a chain are counted (Unchained) while no chained line came
// before them; after one, such a line is a break (an edit that dropped the
// fields). Lines that are not audit lines are skipped and counted.
func Verify(sources []Source, key []byte) (*Report, error) {
	r := &Report{}
	chains := map[string]*link{}
	var order []string
	defer func() {
		for _, id := range order {
			r.Heads = append(r.Heads, Head{Chain: id, Lines: chains[id].lines, Last: chains[id].digest})
		}
	}()
	seenChained := false
	// frags are the lines just read that begin as an audit line and do
	// not parse: torn writes if the line after them records them, else
	// (settle) a chained line edited until it no longer parses, which
	// breaks the chain after itself as any changed line does, or a line
	// that is not an audit line.
	var frags []fragment
	// ends[k]: source k's line count, once it is read.
	ends := make([]int, 0, len(sources))
	settle := func(fs []fragment) error {
		for _, f := range fs {
			if f.chained {
				return &Break{FromFile: f.file, FromLine: f.line, File: f.file, Line: f.line + 1, Reason: fmt.Sprintf("line %d is an audit line that no longer parses", f.line)}
			}
			// A fragment holding an outcome (cut before its prev) that no
			// line records is a torn write only at its file's end (killed,
			// then rotated before a colibri opened the file again): in the
			// middle of a file, it is an audit line made up or cut by hand.
			if f.outcome && (f.src >= len(ends) || f.line < ends[f.src]) {
				return &Break{FromFile: f.file, FromLine: f.line, File: f.file, Line: f.line + 1, Reason: fmt.Sprintf("line %d looks like an audit line, does not parse, and no line records it as a torn write", f.line)}
			}
			r.Skipped++
		}
		return nil
	}
	for i, src := range sources {
		sc := bufio.NewScanner(src.R)
		sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
		unterminated := false
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			adv, tok, err := splitNewline(data, atEOF)
			unterminated = tok != nil && adv == len(tok)
			return adv, tok, err
		})
		n := 0
		for sc.Scan() {
			n++
			line := sc.Bytes()
			var l struct {
				TS      *string     `json:"ts"`
				Outcome *string     `json:"outcome"`
				Chain   *string     `json:"chain"`
				Prev    *string     `json:"prev"`
				Torn    []TornWrite `json:"torn"`
			}
			if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &l) != nil {
				if len(frags) == maxTorn*4 {
					if err := settle(frags[:1]); err != nil {
						return r, err
					}
					frags = frags[1:]
				}
				frags = append(frags, fragment{src: i, file: src.Name, line: n, bytes: len(line), digest: LineDigest(key, line),
					chained: bytes.Contains(line, []byte(`"prev":`)), outcome: bytes.Contains(line, []byte(`"outcome":`)), unterminated: unterminated})
				continue
			}
			if len(frags) > 0 || len(l.Torn) > 0 {
				// The line after torn writes records them (Writer.Write):
				// the last len(l.Torn) fragments, in order.
				k := len(frags) - len(l.Torn)
				if k >= 0 && l.Chain != nil && l.Prev != nil && matchTorn(frags[k:], l.Torn) {
					for _, f := range frags[k:] {
						r.Torn = append(r.Torn, tornNote(f.file, f.line, f.bytes, fmt.Sprintf("ended and recorded by %s line %d", src.Name, n)))
					}
				} else {
					k = len(frags)
					switch {
					case len(l.Torn) > 0 && k > 0:
						// What the line records is not what is before it: the
						// fragment was changed.
						f := frags[k-1]
						return r, &Break{FromFile: f.file, FromLine: f.line, File: src.Name, Line: n,
							Reason: fmt.Sprintf("line %d records a torn write before it that is not line %d as it is now (a torn line changed)", n, f.line)}
					case len(l.Torn) > 0 && l.Chain != nil && l.Prev != nil && (i > 0 || chains[*l.Chain] != nil):
						// The fragment was written after the chain's line
						// before this one, or into this file or the one
						// before it: it is in the files given, or deleted.
						from, fromLine := src.Name, n-1
						if c := chains[*l.Chain]; c != nil {
							from, fromLine = c.file, c.line
						}
						return r, &Break{FromFile: from, FromLine: fromLine, File: src.Name, Line: n,
							Reason: fmt.Sprintf("line %d records %d torn %s before it that %s not there (deleted)", n, len(l.Torn), plural(len(l.Torn), "write", "writes"), plural(len(l.Torn), "is", "are"))}
					case len(l.Torn) > 0 && l.Chain != nil && l.Prev != nil:
						// A chain's first line in the first file: the
						// fragment may be in a file not given.
						r.Torn = append(r.Torn, fmt.Sprintf("%s line %d records %d torn %s before it that %s not in the files given", src.Name, n, len(l.Torn), plural(len(l.Torn), "write", "writes"), plural(len(l.Torn), "is", "are")))
					}
				}
				if err := settle(frags[:k]); err != nil {
					return r, err
				}
				frags = frags[:0]
			}
			if len(bytes.TrimSpace(line)) == 0 || line[0] != '{' {
				r.Skipped++
				continue
			}
			if l.TS == nil || l.Outcome == nil {
				r.Skipped++
				continue
			}
			if l.Chain == nil || l.Prev == nil {
				if seenChained {
					return r, &Break{FromFile: src.Name, FromLine: n - 1, File: src.Name, Line: n, Reason: "an audit line without chain or prev after chained ones"}
				}
				r.Unchained++
				continue
			}
			seenChained = true
			prev := *l.Prev
			switch {
			case key == nil && strings.HasPrefix(prev, "hmac-sha256:"):
				return r, ErrNeedKey
			case key != nil && strings.HasPrefix(prev, "sha256:"):
				return r, ErrKeyless
			}
			c, known := chains[*l.Chain]
			switch {
			case !known && key != nil && !sealed(key, *l.Chain):
				// Anyone can write a genesis line: a keyed chain's id is
				// sealed with the key (chain.go), so one without it was not
				// started by colibri.
				return r, &Break{FromFile: src.Name, FromLine: n - 1, File: src.Name, Line: n,
					Reason: fmt.Sprintf("chain %s was not started under this key (its id is not sealed with it)", *l.Chain)}
			case !known && prev == Genesis:
				r.Chains++
			case !known && i == 0:
				r.Chains++
				r.MidChain = append(r.MidChain, fmt.Sprintf("%s line %d (chain %s)", src.Name, n, *l.Chain))
			case !known:
				return r, &Break{FromFile: src.Name, FromLine: n - 1, File: src.Name, Line: n,
					Reason: fmt.Sprintf("chain %s continues from a line that is in none of the files before", *l.Chain)}
			case prev == Genesis:
				return r, &Break{FromFile: c.file, FromLine: c.line, File: src.Name, Line: n,
					Reason: fmt.Sprintf("chain %s starts again", *l.Chain)}
			case prev != c.digest:
				return r, &Break{FromFile: c.file, FromLine: c.line, File: src.Name, Line: n,
					Reason: "its prev is not the digest of the chain's line before it (a line changed, removed, inserted or moved)"}
			}
			if c == nil {
				c = &link{}
				chains[*l.Chain] = c
				order = append(order, *l.Chain)
			}
			c.file, c.line, c.digest = src.Name, n, LineDigest(key, line)
			c.lines++
			r.Lines++
		}
		ends = append(ends, n)
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return r, fmt.Errorf("%s: line %d is longer than %d bytes: not an audit log", src.Name, n+1, MaxLine)
			}
			return r, fmt.Errorf("reading %s: %w", src.Name, err)
		}
	}
	// The last file ends in a torn write no line came after (colibri was
	// killed mid-write and has not written since).
	if k := len(frags) - 1; k >= 0 && frags[k].unterminated && frags[k].src == len(sources)-1 {
		f := frags[k]
		r.Torn = append(r.Torn, tornNote(f.file, f.line, f.bytes, "unfinished at the end of the file"))
		frags = frags[:k]
	}
	if err := settle(frags); err != nil {
		return r, err
	}
	return r, nil
}

// fragment is a line that begins as an audit line and does not parse.
type fragment struct {
	src          int // its source's index
	file         string
	line, bytes  int
	digest       string
	chained      bool // it holds "prev": a chained line's
	outcome      bool // it holds "outcome": an audit line's, cut after it
	unterminated bool // no newline after it: the end of its file
}

func matchTorn(frags []fragment, torn []TornWrite) bool {
	for i, t := range torn {
		if frags[i].bytes != t.Bytes || frags[i].digest != t.Digest {
			return false
		}
	}
	return true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// splitNewline is bufio.ScanLines without its dropping of a carriage
// return before the newline: prev is over a line's bytes without its
// newline only, so a CR added to a line (a file converted to CRLF) is a
// changed byte that breaks the chain, not an edit that passes.
func splitNewline(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
