package oauth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FindServer: the server named, or a usage error that names the closest;
// an unreadable registry is the person's to fix too.
func TestFindServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reg.json")
	if err := os.WriteFile(path, []byte(`{"servers": {"github": {"url": "https://example.com/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if srv, err := FindServer(path, "github"); err != nil || srv.URL != "https://example.com/mcp" {
		t.Fatalf("github: %v, %v", srv, err)
	}
	_, err := FindServer(path, "gihtub")
	if !IsUsage(err) || !strings.Contains(err.Error(), `unknown server "gihtub" in `+path+`: did you mean "github"?`) {
		t.Errorf("gihtub: %v", err)
	}
	if _, err := FindServer(filepath.Join(t.TempDir(), "none.json"), "github"); !IsUsage(err) {
		t.Errorf("no registry: %v, want a usage error", err)
	}
	if IsUsage(errors.New("the authorization server said no")) {
		t.Error("a login that failed is not a usage error")
	}
}
