// Package audit writes colibri's audit log (docs/operations.md#audit-log): one
// JSON line per call of a hosted tool, whatever became of it (allowed,
// denied, refused by the gate, failed, cancelled), appended to a file of
// mode 0600 that is reopened on SIGHUP so that newsyslog(8) can rotate it.
//
//	w, err := audit.Open("/var/log/colibri/audit.log", os.Stderr)
//	d := audit.NewDigester(key) // key from --audit-key-file, or nil
//	args := d.Digest(rawArguments)
//	err = w.Write(&audit.Record{TS: time.Now(), ID: id, Server: "demo", Tool: "echo", Args: &args, Outcome: audit.OK})
//	err = w.Reopen() // on SIGHUP
//
// A record never holds an argument value, a result, an environment or
// header value, or a token: arguments appear only as a digest and a byte
// count.
package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
)

// Outcomes of a call.
const (
	OK        = "ok"         // the hosted tool answered
	ToolError = "tool_error" // the hosted tool answered with isError
	Error     = "error"      // colibri failed the call (error_kind says how)
	Denied    = "denied"     // the policy refused it
	Cancelled = "cancelled"  // the caller cancelled it
)

// Record is one line of the audit log: exactly the fields of docs/operations.md#audit-log. Fields that do not apply to a call are left out.
type Record struct {
	TS          time.Time `json:"ts"`
	ID          string    `json:"id"`
	Principal   string    `json:"principal"`
	Transport   string    `json:"transport"`
	Client      *Client   `json:"client,omitempty"`
	Server      string    `json:"server,omitempty"`
	Tool        string    `json:"tool,omitempty"`
	ExposedName string    `json:"exposed_name,omitempty"`
	Policy      *Policy   `json:"policy,omitempty"`
	Pin         string    `json:"pin,omitempty"` // "changed": the tool differs from its pinned definition (pin: warn, or refused)
	Args        *Args     `json:"args,omitempty"`
	Outcome     string    `json:"outcome"`
	ErrorKind   string    `json:"error_kind,omitempty"`
	Phase       string    `json:"phase,omitempty"`
	HTTPStatus  int       `json:"http_status,omitempty"`
	Attempts    int       `json:"attempts,omitempty"`
	DurationMS  int64     `json:"duration_ms"`
	ResultBytes *int64    `json:"result_bytes,omitempty"`
	// Torn are the torn writes (torn.go) this line ends and records: the
	// Writer's, as Instance, Chain and Prev are.
	Torn []TornWrite `json:"torn,omitempty"`
	// Instance, Chain and Prev are the Writer's, set as it writes the line
	// (chain.go): what the caller puts there is replaced.
	Instance string `json:"instance,omitempty"`
	Chain    string `json:"chain,omitempty"`
	Prev     string `json:"prev,omitempty"`
}

// Client is the caller's clientInfo, as it introduced itself at initialize.
type Client struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Policy is the policy's decision on the call: "allow" or "deny", and the
// rule that decided (policy.Decision.Rule).
type Policy struct {
	Decision string `json:"decision"`
	Rule     string `json:"rule,omitempty"`
}

// maxName bounds each name a line repeats from what a caller sent: the
// server and tool it asked for, its clientInfo. Real ones are a few dozen
// bytes (a registry name at most 64); a client that introduced itself with
// a megabyte of name must not make each of its calls write a megabyte.
const maxName = 256

// clipped is r with the caller's names cut to maxName bytes (at a character
// boundary, and marked with "…").
func (r *Record) clipped() *Record {
	c := *r
	c.Server, c.Tool, c.ExposedName = clip(r.Server), clip(r.Tool), clip(r.ExposedName)
	if r.Client != nil {
		c.Client = &Client{Name: clip(r.Client.Name), Version: clip(r.Client.Version)}
	}
	return &c
}

func clip(s string) string {
	if len(s) <= maxName {
		return s
	}
	cut := maxName
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Writer appends records to the audit log. It is safe for concurrent use;
// each record is written whole, with one write(2), under a lock.
type Writer struct {
	path string
	opts Options

	mu      sync.Mutex
	w       io.Writer
	f       *os.File // nil when w is stderr
	closed  bool
	warning string // about the file last opened (Warning)
	chain   chain  // this process's hash chain (chain.go)
	// needNL: the file ends in a torn write (torn.go), which the next
	// line's leading newline ends; torn are the torn writes it records.
	needNL bool
	torn   []TornWrite
	// size is the file's size checkTail read before this write; end where
	// the file ended after this one's last whole line (0: unknown), so
	// that a file nobody else wrote to since is not read back.
	size, end int64
}

// Options are a Writer's chain settings; the zero value is an unkeyed
// chain with no instance name.
type Options struct {
	// Instance is this colibri's name (--instance): every line's instance,
	// and the first part of its chain.
	Instance string
	// Key, when set, makes prev an HMAC-SHA256 under it (--audit-key-file)
	// rather than a plain SHA-256, so that nobody without it can rebuild
	// the chain after editing a line.
	Key []byte
	// OnHead, when set, is told of the chain's head every HeadEvery lines
	// (cmd logs it at info, so that a copy of the log kept elsewhere
	// anchors the chain against a truncated tail).
	OnHead func(Head)
}

// Open opens the audit log at path for appending, creating it with mode
// 0600; "-" writes to stderr instead (and Reopen then does nothing).
func Open(path string, stderr io.Writer) (*Writer, error) {
	return OpenWith(path, stderr, Options{})
}

// OpenWith is Open with the chain's options.
func OpenWith(path string, stderr io.Writer, opts Options) (*Writer, error) {
	c, err := newChain(opts)
	if err != nil {
		return nil, err
	}
	if path == "-" {
		return &Writer{path: path, opts: opts, w: stderr, chain: c}, nil
	}
	f, warning, err := openLog(path)
	if err != nil {
		return nil, err
	}
	w := &Writer{path: path, opts: opts, w: f, f: f, warning: warning, chain: c}
	if needNL, frag := tornTail(f, opts.Key); needNL {
		w.needNL = true
		if frag != nil {
			w.addTorn(*frag)
		}
	}
	return w, nil
}

// openLog opens the log for appending, creating it with mode 0600 (which
// no umask can widen). A file that already exists keeps its mode: an
// operator may have widened it on purpose (a log shipper's group), so
// colibri does not change it, but says so in warning when group or others
// can read it, since whoever reads the log learns who called what (and,
// without a key file, can test guesses of arguments).
func openLog(path string) (f *os.File, warning string, err error) {
	// A FIFO, a device or a symbolic link at the path is refused at once
	// (opfile): a link could aim the log's appends at any file colibri may
	// write, and a FIFO would block the open.
	// Read and write: a torn write at the end (torn.go) is read back.
	f, err = safefile.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrPermission) {
		f, err = safefile.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	}
	if err != nil {
		return nil, "", fmt.Errorf("opening the audit log: %w", err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = errors.New("not a regular file")
		}
		return nil, "", fmt.Errorf("opening the audit log %s: %w", path, err)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		warning = fmt.Sprintf("the audit log %s is readable or writable by group or others (mode %04o): whoever reads it learns who called what; chmod 600 it", path, perm)
	}
	return f, warning, nil
}

// Warning is what is amiss with the file opened last (by Open or Reopen),
// for the caller to log, or "": a mode wider than 0600.
func (w *Writer) Warning() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.warning
}

// Path is the log's path, as given to Open.
func (w *Writer) Path() string { return w.path }

// Write appends r as one line. An error means the record is lost: the
// caller logs it and counts it, and the call it describes goes on.
func (w *Writer) Write(r *Record) error {
	c := r.clipped()
	c.Instance = w.opts.Instance
	w.mu.Lock()
	if w.w == nil {
		w.mu.Unlock()
		return errors.New("writing the audit log: it is closed")
	}
	if w.f != nil {
		w.checkTail()
	}
	// The line names the one before it: encoded under the lock, in the
	// order written.
	c.Chain, c.Prev, c.Torn = w.chain.id, w.chain.prev(), w.torn
	line, err := json.Marshal(c)
	if err != nil {
		w.mu.Unlock()
		return fmt.Errorf("encoding an audit record: %w", err)
	}
	pre := 0
	if w.needNL {
		pre = 1
	}
	buf := make([]byte, 0, pre+len(line)+1)
	if w.needNL {
		buf = append(buf, '\n')
	}
	buf = append(append(buf, line...), '\n')
	if n, err := w.w.Write(buf); err != nil {
		w.tore(n, pre, line)
		w.mu.Unlock()
		return fmt.Errorf("writing the audit log %s: %w", w.path, err)
	}
	w.needNL, w.torn = false, nil
	if w.size > 0 {
		w.end = w.size + int64(len(buf)) // where the file ends unless another wrote too
	}
	head, told := w.chain.wrote(line)
	w.mu.Unlock()
	if told && w.opts.OnHead != nil {
		w.opts.OnHead(head)
	}
	return nil
}

// Head is the chain's head now: what colibri logs at exit.
func (w *Writer) Head() Head {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.chain.head()
}

// Reopen opens the path again and writes there from now on: after
// newsyslog(8) renamed the file, the next record goes to a new file at the
// path. If the path cannot be opened, the old file stays in use and the
// error says why.
func (w *Writer) Reopen() error {
	if w.path == "-" {
		return nil
	}
	f, warning, err := openLog(w.path)
	if err != nil {
		return err
	}
	w.mu.Lock()
	if w.closed { // a SIGHUP racing the shutdown: stay closed
		w.mu.Unlock()
		f.Close()
		return errors.New("reopening the audit log: it is closed")
	}
	old := w.f
	// The file's end says whether it ends in a torn write (this
	// process's, or another's that shares it). Torn writes recorded for an
	// old file newsyslog rotated stay recorded for the first line here.
	needNL, frag := tornTail(f, w.opts.Key)
	w.needNL = needNL
	if frag != nil && (len(w.torn) == 0 || w.torn[len(w.torn)-1] != *frag) {
		w.addTorn(*frag)
	}
	w.w, w.f, w.warning, w.size, w.end = f, f, warning, 0, 0
	w.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// Close closes the log; later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f := w.f
	w.w, w.f, w.closed = nil, nil, true
	if f != nil {
		return f.Close()
	}
	return nil
}
