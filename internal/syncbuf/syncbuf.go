// Package syncbuf is a buffer that goroutines may write while a test reads
// it: where the tests collect a logger's lines or a process's output.
//
//	var logs syncbuf.Buffer
//	log := slog.New(slog.NewTextHandler(&logs, nil))
//	… strings.Contains(logs.String(), "started") …
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use. The zero value is empty
// and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
