package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// appendRaw appends s to the file at path as a process killed mid-write
// would have.
func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func verifyFile(t *testing.T, path string, key []byte) (*Report, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Verify([]Source{{Name: "audit.log", R: f}}, key)
}

// A colibri killed mid-write leaves a torn last line: the next colibri to
// open the log ends it and records it in its first line, and verify
// reports the fragment by its line number as a torn write, every chain
// whole — cut before its prev and after it, keyed and not. Without the
// recovery the next line is glued to the fragment and verify fails there
// and for good.
func TestTornWriteRecoveredAtOpen(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("0123456789abcdef0123456789abcdef")} {
		for _, cut := range []int{40, -12} { // 40 bytes in (no prev yet); all but 12 (prev cut)
			t.Run(fmt.Sprintf("keyed=%v,cut=%d", key != nil, cut), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "audit.log")
				writeLog(t, path, Options{Instance: "a", Key: key}, 5).Close()
				// The sixth line, torn: a copy of a real one cut short.
				whole := rawLines(t, path)[4]
				n := cut
				if n < 0 {
					n = len(whole) - 1 + cut
				}
				frag := whole[:n]
				if strings.Contains(frag, `"prev":`) != (cut < 0) {
					t.Fatalf("the fragment %q", frag)
				}
				appendRaw(t, path, frag)
				if r, err := verifyFile(t, path, key); err != nil || len(r.Torn) != 1 || !strings.Contains(r.Torn[0], "audit.log line 6 (") || !strings.Contains(r.Torn[0], "unfinished at the end") {
					t.Errorf("a torn tail: %+v %v", r, err)
				}
				writeLog(t, path, Options{Instance: "b", Key: key}, 3).Close()
				lines := rawLines(t, path)
				if len(lines) != 9 || lines[5] != frag+"\n" || !strings.Contains(lines[6], fmt.Sprintf(`"torn":[{"bytes":%d,"digest":"%s"}]`, len(frag), LineDigest(key, []byte(frag)))) {
					t.Fatalf("after the next colibri opened the log:\n%s", strings.Join(lines, ""))
				}
				r, err := verifyFile(t, path, key)
				if err != nil || r.Lines != 8 || r.Chains != 2 || len(r.Torn) != 1 || !strings.Contains(r.Torn[0], fmt.Sprintf("audit.log line 6 (%d bytes, ended and recorded by audit.log line 7)", len(frag))) {
					t.Errorf("verify after recovery: %+v %v", r, err)
				}
				// The fragment is no edit that passes: a torn write the next
				// line does not record (one made afterwards, a changed
				// digest) is judged as before.
				edited := append([]string(nil), lines...)
				edited[5] = strings.Replace(frag, `"r"`, `"R"`, 1) + "\n"
				_, err = verifyLines(edited, key)
				wantBreak(t, "the torn line edited", err, 6, 7)
				// Only the newest file given: the fragment is not in it.
				r, err = verifyLines(lines[6:], key)
				if err != nil || len(r.Torn) != 1 || !strings.Contains(r.Torn[0], "audit.log line 1 records 1 torn write before it that is not in the files given") {
					t.Errorf("the recovery line alone: %+v %v", r, err)
				}
			})
		}
	}
}

// A whole last line whose newline alone was lost is in its chain already:
// the next colibri only ends it.
func TestTornNewlineOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLog(t, path, Options{Instance: "a"}, 2).Close()
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-1], 0o600)
	writeLog(t, path, Options{Instance: "b"}, 2).Close()
	r, err := verifyFile(t, path, nil)
	if err != nil || r.Lines != 4 || len(r.Torn) != 0 || strings.Contains(string(mustRead(t, path)), `"torn"`) {
		t.Errorf("a lost newline: %+v %v", r, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shortWriter writes the first n bytes of the write it fails, then fails
// (a full disk), once per entry of fail.
type shortWriter struct {
	b    strings.Builder
	fail []int
}

func (s *shortWriter) Write(p []byte) (int, error) {
	if len(s.fail) > 0 {
		n := min(s.fail[0], len(p))
		if n < 0 {
			n += len(p)
		}
		s.fail = s.fail[1:]
		s.b.Write(p[:n])
		return n, errors.New("no space left on device")
	}
	return s.b.Write(p)
}

// A write that fails part-way (a full disk) within one process: the next
// line begins with the newline that ends the fragment and records it, the
// chain continuing from the last whole line; two torn in a row are both
// recorded; a line whose newline alone was lost stays in the chain; a
// write that wrote nothing leaves nothing to record.
func TestTornWriteWithinAProcess(t *testing.T) {
	sw := &shortWriter{}
	w, _ := OpenWith("-", sw, Options{Instance: "a", Key: []byte("k")})
	rec := func(i int) *Record {
		return &Record{TS: time.Unix(int64(1e9+i), 0).UTC(), ID: "r", Principal: "stdio", Transport: "stdio", Server: "demo", Tool: "echo", Outcome: OK, DurationMS: int64(i)}
	}
	w.Write(rec(0))
	for _, fail := range [][]int{{30}, {0}, {25, 50}, {-1}, {1e6}} {
		sw.fail = fail
		for range fail {
			if err := w.Write(rec(1)); err == nil {
				t.Fatal("a failed write said nothing")
			}
		}
		if err := w.Write(rec(2)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Verify([]Source{{Name: "audit.log", R: strings.NewReader(sw.b.String())}}, []byte("k"))
	// The first line, 5 after each failure, 2 whole though they failed.
	if err != nil || r.Lines != 8 || len(r.Torn) != 3 || !strings.HasPrefix(r.Torn[0], "audit.log line 2 (30 bytes, ended and recorded by audit.log line 3)") ||
		!strings.Contains(r.Torn[1], "line 5 (25 bytes, ended and recorded by audit.log line 7)") || !strings.Contains(r.Torn[2], "line 6 (49 bytes, ended and recorded by audit.log line 7)") ||
		strings.Contains(sw.b.String(), "\n\n") {
		t.Errorf("verify: %+v %v\n%s", r, err, sw.b.String())
	}
}

// A torn write's fragment cannot be deleted unseen: when the chain's line
// before the record, or an earlier file, is in the files given, the
// fragment it records is there too (it was written after that line, into
// that file or the one before), so a record of a fragment that is not
// there is a break. Only a chain's first line in the first file given may
// record a fragment of a file not given.
func TestTornFragmentDeleted(t *testing.T) {
	sw := &shortWriter{}
	w, _ := OpenWith("-", sw, Options{Instance: "a", Key: []byte("k")})
	rec := func(i int) *Record {
		return &Record{TS: time.Unix(int64(1e9+i), 0).UTC(), ID: "r", Principal: "stdio", Transport: "stdio", Server: "demo", Tool: "echo", Outcome: OK, DurationMS: int64(i)}
	}
	w.Write(rec(0))
	sw.fail = []int{30}
	w.Write(rec(1))
	w.Write(rec(2))
	w.Write(rec(3))
	lines := strings.SplitAfter(strings.TrimSuffix(sw.b.String(), "\n"), "\n")
	if r, err := verifyLines(lines, []byte("k")); err != nil || len(r.Torn) != 1 {
		t.Fatalf("as written: %+v %v", r, err)
	}
	deleted := append(append([]string(nil), lines[:1]...), lines[2:]...)
	_, err := verifyLines(deleted, []byte("k"))
	wantBreak(t, "the fragment deleted, its chain's line before it given", err, 1, 2)
	// Rotated between the fragment and its record: the fragment ends the
	// older file, the record begins the newer.
	_, err = Verify([]Source{{Name: "audit.log.0", R: strings.NewReader(lines[0])}, {Name: "audit.log", R: strings.NewReader(strings.Join(lines[2:], ""))}}, []byte("k"))
	var b *Break
	if !errors.As(err, &b) || b.File != "audit.log" || b.Line != 1 {
		t.Errorf("the fragment deleted from the older file: %v", err)
	}
	if _, err := Verify([]Source{{Name: "audit.log.0", R: strings.NewReader(strings.Join(lines[:2], ""))}, {Name: "audit.log", R: strings.NewReader(strings.Join(lines[2:], ""))}}, []byte("k")); err != nil {
		t.Errorf("the fragment ending the older file: %v", err)
	}
}

// A line made up to look like an audit line, left unparseable (no prev, no
// closing brace) so that no chain covers it, is no torn write: in the
// middle of a file, and recorded by no line, it breaks the chain. A
// fragment unrecorded at the end of an older file (killed, then rotated
// before any colibri opened the file again) is a torn write.
func TestMadeUpFragmentInTheMiddle(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("k")} {
		path := filepath.Join(t.TempDir(), "audit.log")
		writeLog(t, path, Options{Instance: "a", Key: key}, 4).Close()
		lines := rawLines(t, path)
		forged := `{"ts":"2001-09-09T01:46:42Z","id":"r","principal":"stdio","transport":"stdio","server":"demo","tool":"delete_all","outcome":"ok"` + "\n"
		edited := append(append(append([]string(nil), lines[:2]...), forged), lines[2:]...)
		_, err := verifyLines(edited, key)
		wantBreak(t, "a made-up fragment", err, 3, 4)
		cut := strings.SplitN(lines[3], `,"chain"`, 2)[0] + "\n"
		older := strings.Join(append(append([]string(nil), lines[:3]...), cut), "")
		path2 := filepath.Join(t.TempDir(), "audit.log")
		writeLog(t, path2, Options{Instance: "b", Key: key}, 2).Close()
		newer := strings.Join(rawLines(t, path2), "")
		r, err := Verify([]Source{{Name: "audit.log.0", R: strings.NewReader(older)}, {Name: "audit.log", R: strings.NewReader(newer)}}, key)
		if err != nil || r.Lines != 5 {
			t.Errorf("a fragment ending the older file, unrecorded: %+v %v", r, err)
		}
	}
}

// Two colibri appending to one log: a torn write of one (a full disk,
// then killed) is ended and recorded by the other's next line, not glued
// to it; and when the one that tore writes again after the other ended
// its fragment, it does not record it twice.
func TestTornWriteOfAnotherSharingTheFile(t *testing.T) {
	key := []byte("k")
	rec := &Record{TS: time.Unix(1e9, 0).UTC(), ID: "r", Principal: "stdio", Transport: "stdio", Outcome: OK}
	for _, aLives := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "audit.log")
		a := writeLog(t, path, Options{Instance: "a", Key: key}, 2)
		b := writeLog(t, path, Options{Instance: "b", Key: key}, 1)
		frag := rawLines(t, path)[0][:60]
		// a's next write torn: what tore() would leave, as a write cut short.
		appendRaw(t, path, frag)
		a.mu.Lock()
		a.tore(len(frag), 0, []byte(rawLines(t, path)[0]))
		a.mu.Unlock()
		if err := b.Write(rec); err != nil {
			t.Fatal(err)
		}
		if aLives {
			if err := a.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		b.Write(rec)
		b.Close()
		r, err := verifyFile(t, path, key)
		want := 5
		if aLives {
			want = 6
		}
		if err != nil || r.Lines != want || len(r.Torn) != 1 || !strings.Contains(r.Torn[0], "line 4 (60 bytes, ended and recorded by audit.log line 5)") {
			t.Errorf("a alive %v: %+v %v\n%s", aLives, r, err, strings.Join(rawLines(t, path), ""))
		}
	}
}
