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
	for i, src := range sources {
		sc := bufio.NewScanner(src.R)
		sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
		sc.Split(splitNewline)
		n := 0
		for sc.Scan() {
			n++
			line := sc.Bytes()
			var l struct {
				TS      *string `json:"ts"`
				Outcome *string `json:"outcome"`
				Chain   *string `json:"chain"`
				Prev    *string `json:"prev"`
			}
			if len(bytes.TrimSpace(line)) == 0 || line[0] != '{' {
				r.Skipped++
				continue
			}
			if err := json.Unmarshal(line, &l); err != nil {
				if bytes.Contains(line, []byte(`"prev":`)) {
					// A chained line edited until it no longer parses: it
					// breaks the chain after itself, as any changed line.
					return r, &Break{FromFile: src.Name, FromLine: n, File: src.Name, Line: n + 1, Reason: fmt.Sprintf("line %d is an audit line that no longer parses", n)}
				}
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
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				return r, fmt.Errorf("%s: line %d is longer than %d bytes: not an audit log", src.Name, n+1, MaxLine)
			}
			return r, fmt.Errorf("reading %s: %w", src.Name, err)
		}
	}
	return r, nil
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
