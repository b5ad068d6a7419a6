package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func record(id string) *Record {
	n := int64(12)
	return &Record{TS: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), ID: id, Principal: "ci-bot", Transport: "http",
		Client: &Client{Name: "claude", Version: "1.2"}, Server: "demo", Tool: "echo",
		Policy: &Policy{Decision: "allow"}, Args: &Args{Digest: "sha256:00", Bytes: 2}, Outcome: OK, DurationMS: 3, ResultBytes: &n}
}

func TestWriterAppendsOneLinePerRecordMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, id := range []string{"a1", "b2"} {
		if err := w.Write(record(id)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", st.Mode().Perm())
	}
	lines := readLines(t, path)
	if len(lines) != 2 || lines[0]["id"] != "a1" || lines[1]["id"] != "b2" {
		t.Fatalf("lines: %v", lines)
	}
	b, _ := os.ReadFile(path)
	first, _, _ := strings.Cut(string(b), "\n")
	// The chain's fields end the line (chain_test.go checks them).
	first = regexp.MustCompile(`,"chain":"[^"]*","prev":"genesis"}$`).ReplaceAllString(first, "}")
	want := `{"ts":"2026-03-04T05:06:07Z","id":"a1","principal":"ci-bot","transport":"http","client":{"name":"claude","version":"1.2"},` +
		`"server":"demo","tool":"echo","policy":{"decision":"allow"},"args":{"digest":"sha256:00","bytes":2},"outcome":"ok","duration_ms":3,"result_bytes":12}`
	if first != want {
		t.Errorf("line\n  %s\nwant\n  %s", first, want)
	}
	// Appending, not truncating: a second writer (a restart) adds.
	w2, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	w2.Write(record("c3"))
	w2.Close()
	if n := len(readLines(t, path)); n != 3 {
		t.Errorf("%d lines after a reopen by a new writer, want 3", n)
	}
}

// newsyslog renames the file and sends SIGHUP: after Reopen the next record
// goes to a new file at the path, and the renamed one keeps what it had.
func TestReopenAfterRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Write(record("before"))
	if err := os.Rename(path, path+".0"); err != nil {
		t.Fatal(err)
	}
	w.Write(record("still-old")) // not reopened yet: the renamed file
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	w.Write(record("after"))
	old, cur := readLines(t, path+".0"), readLines(t, path)
	if len(old) != 2 || old[1]["id"] != "still-old" || len(cur) != 1 || cur[0]["id"] != "after" {
		t.Errorf("old %v, new %v", old, cur)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("the new file's mode is %04o", st.Mode().Perm())
	}
	// A path that cannot be opened keeps the old file in use.
	os.Remove(path)
	os.Mkdir(path, 0o700)
	if err := w.Reopen(); err == nil {
		t.Error("reopening onto a directory succeeded")
	}
	if err := w.Write(record("kept")); err != nil {
		t.Errorf("writing after a failed reopen: %v", err)
	}
}

func TestConcurrentWritesStayWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for range 50 {
				if err := w.Write(record(strings.Repeat("x", i*100))); err != nil {
					t.Error(err)
				}
			}
			if i == 3 {
				w.Reopen()
			}
		})
	}
	wg.Wait()
	if n := len(readLines(t, path)); n != 16*50 {
		t.Errorf("%d lines, want %d", n, 16*50)
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A failed write is returned, for the caller to log and count.
func TestWriteFailureIsReturned(t *testing.T) {
	w := &Writer{path: "/var/log/colibri/audit.log", w: failing{}}
	if err := w.Write(record("x")); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("err = %v", err)
	}
	w, _ = Open(filepath.Join(t.TempDir(), "a.log"), nil)
	w.Close()
	if err := w.Write(record("x")); err == nil {
		t.Error("writing a closed log succeeded")
	}
}

func TestDashIsStderr(t *testing.T) {
	var stderr bytes.Buffer
	w, err := Open("-", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(record("to-stderr"))
	if err := w.Reopen(); err != nil {
		t.Errorf("Reopen of stderr: %v", err)
	}
	if !strings.HasPrefix(stderr.String(), `{"ts":`) || !strings.Contains(stderr.String(), `"id":"to-stderr"`) {
		t.Errorf("stderr: %q", stderr.String())
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, `{}`},
		{`null`, `{}`},
		{` { "b" : 1 ,"a":[1.50, "<x&y>", {"z":null,"y":true}]} `, `{"a":[1.50,"<x&y>",{"y":true,"z":null}],"b":1}`},
		{`{"n":12345678901234567890123}`, `{"n":12345678901234567890123}`},
		{`{"é":"\u00e9"}`, `{"é":"é"}`},
	} {
		got, err := Canonical(json.RawMessage(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{`, `{} {}`, `nope`} {
		if _, err := Canonical(json.RawMessage(bad)); err == nil {
			t.Errorf("Canonical(%s) accepted it", bad)
		}
	}
}

func TestDigest(t *testing.T) {
	plain := NewDigester(nil)
	// sha256("{}")
	if got := plain.Digest(nil); got != (Args{Digest: "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", Bytes: 2}) {
		t.Errorf("empty arguments: %+v", got)
	}
	a := plain.Digest(json.RawMessage(`{"path":"/etc/passwd","mode":"r"}`))
	b := plain.Digest(json.RawMessage("{\n  \"mode\": \"r\",\n  \"path\": \"/etc/passwd\"\n}"))
	if a != b {
		t.Errorf("the same arguments, spaced and ordered differently: %+v, %+v", a, b)
	}
	if c := plain.Digest(json.RawMessage(`{"path":"/etc/shadow","mode":"r"}`)); c.Digest == a.Digest {
		t.Error("different arguments, same digest")
	}
	keyed := NewDigester([]byte("k1"))
	h := keyed.Digest(json.RawMessage(`{"path":"/etc/passwd","mode":"r"}`))
	if !strings.HasPrefix(h.Digest, "hmac-sha256:") || len(h.Digest) != len("hmac-sha256:")+64 || h.Bytes != a.Bytes {
		t.Errorf("keyed: %+v", h)
	}
	if h2 := NewDigester([]byte("k2")).Digest(json.RawMessage(`{"mode":"r","path":"/etc/passwd"}`)); h2.Digest == h.Digest {
		t.Error("two keys, one digest")
	}
	if strings.Contains(a.Digest+h.Digest, "passwd") {
		t.Error("a digest holds the value")
	}
	// Numbers are digested as written, as colibri passes them on: 1 and
	// 1.0 are different arguments (a tool may tell them apart).
	if one, onePointZero := plain.Digest(json.RawMessage(`{"n":1}`)), plain.Digest(json.RawMessage(`{"n":1.0}`)); one.Digest == onePointZero.Digest {
		t.Error("1 and 1.0: one digest")
	}
	// Not JSON: digested as it came, never echoed.
	if d := plain.Digest(json.RawMessage(`{secret`)); !strings.HasPrefix(d.Digest, "sha256:") || d.Bytes != 7 {
		t.Errorf("invalid JSON: %+v", d)
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), mode)
		os.Chmod(p, mode)
		return p
	}
	key, warning, err := LoadKey(write("ok", "c2VjcmV0LWtleQ==\n", 0o600))
	if err != nil || string(key) != "c2VjcmV0LWtleQ==" || warning != "" {
		t.Errorf("a private key file: %q, %q, %v", key, warning, err)
	}
	_, warning, err = LoadKey(write("open", "k\n", 0o644))
	if err != nil || !strings.Contains(warning, "readable by group or others (mode 0644)") || strings.Contains(warning, "k\n") {
		t.Errorf("a world-readable key file: warning %q, %v", warning, err)
	}
	if _, _, err := LoadKey(write("empty", " \n", 0o600)); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("an empty key file: %v", err)
	}
	if _, _, err := LoadKey(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "COLIBRI_MCP_AUDIT_KEY_FILE") {
		t.Errorf("a missing key file: %v", err)
	}
}

// What a caller sent is repeated on each of its lines: a megabyte of
// clientInfo, or of tool name, is cut, not written with every call.
func TestCallersNamesAreClipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := record("x")
	huge := strings.Repeat("é", 1<<19) // 1 MiB
	r.Client = &Client{Name: huge, Version: huge}
	r.Server, r.Tool, r.ExposedName = huge, huge, huge
	if err := w.Write(r); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if len(b) > 4096 {
		t.Errorf("a line of %d bytes", len(b))
	}
	l := readLines(t, path)[0]
	want := strings.Repeat("é", 128) + "…"
	if l["tool"] != want || l["server"] != want || l["client"].(map[string]any)["name"] != want {
		t.Errorf("clipped: tool %q", l["tool"])
	}
	if r.Tool != huge {
		t.Error("Write changed the caller's record")
	}
	short := record("y")
	if w.Write(short); readLines(t, path)[1]["tool"] != "echo" {
		t.Error("a short name was changed")
	}
}
