package audit

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeLog writes n records through a Writer at path, and returns the lines.
func writeLog(t *testing.T, path string, opts Options, n int) *Writer {
	t.Helper()
	w, err := OpenWith(path, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := w.Write(&Record{TS: time.Unix(int64(1e9+i), 0).UTC(), ID: "r", Principal: "stdio", Transport: "stdio",
			Server: "demo", Tool: "echo", Outcome: OK, DurationMS: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func rawLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

func verifyLines(lines []string, key []byte) (*Report, error) {
	return Verify([]Source{{Name: "audit.log", R: strings.NewReader(strings.Join(lines, ""))}}, key)
}

func wantBreak(t *testing.T, what string, err error, from, to int) {
	t.Helper()
	var b *Break
	if !errors.As(err, &b) || b.FromLine != from || b.Line != to || b.File != "audit.log" {
		t.Errorf("%s: %v, want a break between lines %d and %d", what, err, from, to)
		return
	}
	if !strings.Contains(b.Error(), "audit.log") {
		t.Errorf("%s: %q does not name the file", what, b.Error())
	}
}

// Verify fails naming the lines for a changed byte, a deleted line, two
// swapped lines and an inserted copy; a whole log passes.
func TestChainTamperEvident(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLog(t, path, Options{Instance: "web1"}, 10).Close()
	lines := rawLines(t, path)
	if !strings.Contains(lines[0], `"instance":"web1","chain":"web1:`) || !strings.Contains(lines[0], `"prev":"genesis"`) {
		t.Fatalf("first line: %s", lines[0])
	}
	r, err := verifyLines(lines, nil)
	if err != nil || r.Lines != 10 || r.Chains != 1 || len(r.MidChain) != 0 {
		t.Fatalf("whole: %+v %v", r, err)
	}
	changed := append([]string(nil), lines...)
	changed[3] = strings.Replace(changed[3], `"duration_ms":3`, `"duration_ms":4`, 1)
	_, err = verifyLines(changed, nil)
	wantBreak(t, "changed byte in line 4", err, 4, 5)

	deleted := append(append([]string(nil), lines[:3]...), lines[4:]...)
	_, err = verifyLines(deleted, nil)
	wantBreak(t, "line 4 deleted", err, 3, 4)

	swapped := append([]string(nil), lines...)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	_, err = verifyLines(swapped, nil)
	wantBreak(t, "lines 4 and 5 swapped", err, 3, 4)

	inserted := append(append(append([]string(nil), lines[:6]...), lines[1]), lines[6:]...)
	_, err = verifyLines(inserted, nil)
	wantBreak(t, "a copy of line 2 inserted as line 7", err, 6, 7)

	broken := append([]string(nil), lines...)
	broken[5] = broken[5][:len(broken[5])-20] + "\n"
	_, err = verifyLines(broken, nil)
	wantBreak(t, "line 6 cut short", err, 6, 7)
}

// A SIGHUP reopen after newsyslog's rotation continues the chain into the
// new file: both files verify, in the order written; the new one alone
// verifies from where it starts, said to start mid-chain.
func TestChainAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	w := writeLog(t, path, Options{}, 5)
	if err := os.Rename(path, path+".0"); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		w.Write(&Record{TS: time.Now(), ID: "r", Outcome: OK})
	}
	w.Close()
	if first := rawLines(t, path)[0]; strings.Contains(first, Genesis) {
		t.Errorf("the rotated-to file starts a new chain: %s", first)
	}
	old, _ := os.Open(path + ".0")
	cur, _ := os.Open(path)
	r, err := Verify([]Source{{path + ".0", old}, {path, cur}}, nil)
	if err != nil || r.Lines != 8 || r.Chains != 1 || len(r.MidChain) != 0 {
		t.Errorf("both files: %+v %v", r, err)
	}
	cur, _ = os.Open(path)
	r, err = Verify([]Source{{path, cur}}, nil)
	if err != nil || r.Lines != 3 || len(r.MidChain) != 1 || !strings.Contains(r.MidChain[0], "line 1") {
		t.Errorf("the new file alone: %+v %v", r, err)
	}
	// Out of order, the chain is broken where the files meet.
	old, _ = os.Open(path + ".0")
	cur, _ = os.Open(path)
	if _, err := Verify([]Source{{path, cur}, {path + ".0", old}}, nil); err == nil {
		t.Error("the files in the wrong order verified")
	}
}

// Several processes appending to one file each keep their own chain.
func TestChainPerProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	a, err := OpenWith(path, nil, Options{Instance: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenWith(path, nil, Options{Instance: "b"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		w := a
		if i%3 == 0 {
			w = b
		}
		w.Write(&Record{TS: time.Now(), ID: "r", Outcome: OK, DurationMS: int64(i)})
	}
	a.Close()
	b.Close()
	lines := rawLines(t, path)
	if r, err := verifyLines(lines, nil); err != nil || r.Chains != 2 || r.Lines != 6 {
		t.Fatalf("two chains: %+v %v", r, err)
	}
	// Line 3 (a's second) removed: a's next line (5) names it.
	_, err = verifyLines(append(append([]string(nil), lines[:2]...), lines[3:]...), nil)
	wantBreak(t, "a's line removed", err, 2, 4)
}

// A keyed chain verifies with its key only, and cannot be rebuilt without
// it: an editor who recomputes the chain with plain SHA-256, or with
// another key, is caught.
func TestChainKeyed(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLog(t, path, Options{Key: key}, 5).Close()
	lines := rawLines(t, path)
	if !strings.Contains(lines[1], `"prev":"hmac-sha256:`) {
		t.Fatalf("line 2: %s", lines[1])
	}
	if r, err := verifyLines(lines, key); err != nil || r.Lines != 5 {
		t.Fatalf("with the key: %+v %v", r, err)
	}
	if _, err := verifyLines(lines, nil); !errors.Is(err, ErrNeedKey) {
		t.Errorf("without the key: %v", err)
	}
	rebuild := func(k []byte) []string {
		out := make([]string, len(lines))
		prev := Genesis
		for i, l := range lines {
			l = strings.TrimSuffix(l, "\n")
			if i == 2 {
				l = strings.Replace(l, `"outcome":"ok"`, `"outcome":"denied"`, 1)
			}
			j := strings.Index(l, `"prev":"`)
			l = l[:j] + `"prev":"` + prev + `"}`
			prev = LineDigest(k, []byte(l))
			out[i] = l + "\n"
		}
		return out
	}
	if _, err := verifyLines(rebuild(nil), key); !errors.Is(err, ErrKeyless) {
		t.Errorf("rebuilt with SHA-256: %v", err)
	}
	if _, err := verifyLines(rebuild([]byte("guess")), key); err == nil {
		t.Error("rebuilt with another key: verified")
	}
}

// Lines written before the chain are counted, not failed; lines that are
// not audit lines (colibri's log sharing stderr) are skipped and counted;
// an unchained audit line after chained ones is a break.
func TestChainOlderAndForeignLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	old := `{"ts":"2026-01-01T00:00:00Z","id":"x","principal":"stdio","transport":"stdio","outcome":"ok","duration_ms":1}` + "\n"
	os.WriteFile(path, []byte(old+old), 0o600)
	writeLog(t, path, Options{}, 3).Close()
	lines := rawLines(t, path)
	mixed := append([]string{"time=2026 level=INFO msg=\"serving\"\n"}, lines...)
	r, err := verifyLines(mixed, nil)
	if err != nil || r.Unchained != 2 || r.Skipped != 1 || r.Lines != 3 {
		t.Errorf("older and foreign lines: %+v %v", r, err)
	}
	_, err = verifyLines(append(append([]string(nil), lines...), old), nil)
	wantBreak(t, "an unchained line appended", err, 5, 6)
}

// The chain's head is told every HeadEvery lines, and Head says it.
func TestChainHead(t *testing.T) {
	var heads []Head
	w, err := OpenWith("-", io.Discard, Options{OnHead: func(h Head) { heads = append(heads, h) }})
	if err != nil {
		t.Fatal(err)
	}
	for range 2*HeadEvery + 1 {
		w.Write(&Record{TS: time.Now(), Outcome: OK})
	}
	if len(heads) != 2 || heads[1].Lines != 2*HeadEvery || !strings.HasPrefix(heads[1].Last, "sha256:") {
		t.Errorf("heads: %+v", heads)
	}
	if h := w.Head(); h.Lines != 2*HeadEvery+1 || h.Chain != heads[0].Chain {
		t.Errorf("head: %+v", h)
	}
}

// The chain's cost per line (docs/benchmarks.md: at most 5 µs): the
// digest of a typical line and its bookkeeping.
func BenchmarkChainLine(b *testing.B) {
	line := bytes.Repeat([]byte("x"), 420)
	for _, key := range [][]byte{nil, bytes.Repeat([]byte{1}, 32)} {
		name := "sha256"
		if key != nil {
			name = "hmac-sha256"
		}
		b.Run(name, func(b *testing.B) {
			c := chain{id: "i:1:0", key: key}
			b.ReportAllocs()
			for b.Loop() {
				c.prev()
				c.wrote(line)
			}
		})
	}
}

// A whole audit line written, chain included, to a discarding writer.
func BenchmarkWrite(b *testing.B) {
	w, _ := OpenWith("-", io.Discard, Options{Instance: "web1"})
	r := &Record{TS: time.Now(), ID: "0123456789abcdef", Principal: "alice", Transport: "http", Client: &Client{Name: "claude", Version: "1"},
		Server: "github", Tool: "search_issues", Policy: &Policy{Decision: "allow", Rule: "allow"}, Args: &Args{Digest: "sha256:" + strings.Repeat("a", 64), Bytes: 120},
		Outcome: OK, DurationMS: 12}
	b.ReportAllocs()
	for b.Loop() {
		w.Write(r)
	}
}

// A carriage return added before a line's newline is a changed byte: the
// digest is over the line's bytes without its newline only (bufio's
// ScanLines would drop the CR and let the edit pass).
func TestChainCarriageReturnIsAChangedByte(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLog(t, path, Options{Instance: "web1"}, 4).Close()
	lines := rawLines(t, path)
	crlf := append([]string(nil), lines...)
	crlf[1] = strings.TrimSuffix(crlf[1], "\n") + "\r\n"
	_, err := verifyLines(crlf, nil)
	wantBreak(t, "a CR added to line 2", err, 2, 3)
	all := make([]string, len(lines))
	for i, l := range lines {
		all[i] = strings.TrimSuffix(l, "\n") + "\r\n"
	}
	_, err = verifyLines(all, nil)
	wantBreak(t, "a file converted to CRLF", err, 1, 2)
}

// Verify reports each chain's head (its id, lines and last digest) in the
// form colibri logs it, so that a head logged elsewhere shows a truncated
// tail: the log ends whole, but short of the head that was logged.
func TestVerifyReportsHeads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w := writeLog(t, path, Options{Instance: "web1"}, 5)
	logged := w.Head()
	w.Close()
	lines := rawLines(t, path)
	rep, err := verifyLines(lines, nil)
	if err != nil || len(rep.Heads) != 1 || rep.Heads[0] != logged {
		t.Fatalf("whole: %v %+v, want %+v", err, rep, logged)
	}
	rep, err = verifyLines(lines[:4], nil)
	if err != nil || len(rep.Heads) != 1 || rep.Heads[0].Lines != 4 || rep.Heads[0].Last == logged.Last {
		t.Errorf("truncated: %v %+v", err, rep)
	}
}

// Nobody without the key can start a chain of their own in a keyed log:
// genesis lines are not keyed, so the chain's id is sealed with the key,
// and verify refuses a chain whose id is not (review of issue 37: two
// invented genesis-only lines under fresh ids verified as whole).
func TestChainKeyedCannotBeStartedWithoutTheKey(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLog(t, path, Options{Key: key, Instance: "i"}, 2).Close()
	lines := rawLines(t, path)
	forged := []string{
		`{"ts":"2026-12-01T00:00:00Z","outcome":"ok","chain":"a","prev":"genesis"}` + "\n",
		`{"ts":"2026-12-01T00:00:00Z","outcome":"ok","chain":"i:1:0011223344556677.0011223344556677","prev":"genesis"}` + "\n",
	}
	for _, f := range forged {
		if _, err := verifyLines([]string{f}, key); err == nil || !strings.Contains(err.Error(), "not started under this key") {
			t.Errorf("a forged chain alone: %v, want a break", err)
		}
		if _, err := verifyLines(append(append([]string(nil), lines...), f), key); err == nil {
			t.Errorf("a forged chain after a real one: verified")
		}
	}
	// An unkeyed chain's id carries no seal, and needs none.
	plain := filepath.Join(t.TempDir(), "plain.log")
	writeLog(t, plain, Options{Instance: "i"}, 2).Close()
	if _, err := verifyLines(rawLines(t, plain), nil); err != nil {
		t.Errorf("an unkeyed log: %v", err)
	}
}
