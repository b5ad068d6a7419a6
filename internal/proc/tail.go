package proc

import (
	"bufio"
	"io"
	"strings"
	"sync"
)

// StderrTailBytes bounds what is kept of a hosted server's stderr for error
// reports (docs/registry.md#error-kinds: "at most 4 KiB").
const StderrTailBytes = 4 << 10

// maxStderrLine bounds one logged line; a longer one is cut, so that a server
// flooding stderr without newlines costs bounded memory.
const maxStderrLine = 4 << 10

// tail keeps the last lines written to a stream, at most max bytes.
type tail struct {
	mu     sync.Mutex
	max    int
	lines  []string
	size   int
	redact func(string) string // nil: kept as written
	held   func(string) int    // bytes at a cut that may begin a secret (see redact.Set.Held)
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) add(line string) {
	if len(line) > t.max {
		line = line[len(line)-t.max:]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	t.size += len(line) + 1
	for t.size > t.max && len(t.lines) > 0 {
		t.size -= len(t.lines[0]) + 1
		t.lines[0] = ""
		t.lines = t.lines[1:]
	}
}

// String returns the kept lines, joined by newlines.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

// readLines reads r to its end, line by line, keeping each line and passing
// it to each; a line longer than maxStderrLine is cut into pieces.
func (t *tail) readLines(r io.Reader, each func(string)) {
	br := bufio.NewReaderSize(r, maxStderrLine)
	carry := "" // the end of a cut piece that may begin a secret
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			line := carry + string(b)
			carry = ""
			if err == bufio.ErrBufferFull && t.held != nil {
				if n := t.held(line); n > 0 {
					line, carry = line[:len(line)-n], line[len(line)-n:]
				}
			}
			line = strings.TrimRight(line, "\r\n")
			if t.redact != nil {
				line = t.redact(line)
			}
			if line != "" || err != bufio.ErrBufferFull {
				t.add(line)
				each(line)
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			if carry != "" {
				line := carry
				if t.redact != nil {
					line = t.redact(line)
				}
				t.add(line)
				each(line)
			}
			return
		}
	}
}
