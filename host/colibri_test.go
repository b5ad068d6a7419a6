package host_test

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/proc"
	"github.com/colibri-mcp/colibri-mcp/internal/session"
	"github.com/colibri-mcp/colibri-mcp/internal/syncbuf"
	"github.com/colibri-mcp/colibri-mcp/registry"
)

// colibriBin is colibri-mcp, built once in TestMain, for the tests that
// host it.
var colibriBin string

// TestColibriHostsColibri: colibri's own HTTP mode, behind a token file, as
// the remote upstream of another colibri, with the bearer token from the
// environment through ${NAME}. The token appears in no output and no log.
func TestColibriHostsColibri(t *testing.T) {
	t.Parallel()
	const token = "tok-0123456789-s3cr3t"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	reg := filepath.Join(dir, "external-mcp.json")
	os.WriteFile(tokens, []byte("upstream "+token+"\n"), 0o600)
	doc, _ := json.Marshal(map[string]any{"servers": map[string]any{"ok": map[string]any{"command": fakeBin, "args": []string{"ok"}}}})
	os.WriteFile(reg, doc, 0o600)

	cmd := exec.Command(colibriBin, "serve", "--http", "127.0.0.1:0", "--token-file", tokens,
		"--external-config", reg, "--external-call", "--log-level", "debug")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "COLIBRI_MCP_PIN_FILE=" + filepath.Join(dir, "pins.json")}
	stderr, _ := cmd.StderrPipe()
	if err := proc.Start(cmd); err != nil {
		t.Fatal(err)
	}
	var innerLog syncbuf.Buffer
	urlCh := make(chan string, 1)
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		re := regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+/mcp)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			innerLog.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlCh <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		proc.Reaped(cmd.Process)
	})
	var url string
	select {
	case url = <-urlCh:
	case <-time.After(30 * time.Second):
		t.Fatalf("colibri did not say where it serves:\n%s", innerLog.String())
	}

	var outerLog syncbuf.Buffer
	h := newHarness(t, host.Options{
		Logger:  slog.New(slog.NewTextHandler(&outerLog, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Environ: func() []string { return []string{"UPSTREAM_TOKEN=" + token, "WRONG_TOKEN=wrong-s3cr3t"} },
	})
	srv := &registry.Server{Name: "colibri", URL: url, BearerToken: "${UPSTREAM_TOKEN}"}
	res, err := h.CallTool(t.Context(), srv, "colibri_external_mcp_call_tool", session.ArgumentsOf(
		map[string]any{"server": "ok", "name": "echo", "arguments": map[string]any{"message": "through two colibris"}}), nil, nil)

	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "Echo: through two colibris" {
		t.Fatalf("call through colibri: %v %+v", err, res)
	}

	wrong := &registry.Server{Name: "colibri", URL: url, BearerToken: "${WRONG_TOKEN}"}
	_, err = h.ListTools(t.Context(), wrong, nil)
	e := wantKind(t, err, failure.KindUnauthorized, failure.PhaseInitialize)
	if e.HTTPStatus != 401 {
		t.Errorf("http_status %d, want 401", e.HTTPStatus)
	}

	h.Close()
	cmd.Process.Signal(os.Interrupt)
	<-logDone
	for what, shown := range map[string]string{"error": err.Error(), "outer log": outerLog.String(), "inner log": innerLog.String()} {
		if strings.Contains(shown, "s3cr3t") {
			t.Errorf("a token is shown in the %s:\n%s", what, shown)
		}
	}
}
