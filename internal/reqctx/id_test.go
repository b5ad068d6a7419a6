package reqctx

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
)

func TestHandlerAddsTheContextsID(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(Handler(slog.NewTextHandler(&buf, nil))).With("server", "demo")
	id := NewID()
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) || id == NewID() {
		t.Fatalf("id %q", id)
	}
	log.InfoContext(WithID(context.Background(), id), "retrying")
	log.Info("no context")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "server=demo request_id="+id) || strings.Contains(lines[1], "request_id") {
		t.Errorf("log:\n%s", buf.String())
	}
}
