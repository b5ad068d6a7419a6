package audit

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// Setup says what the operator should know: a key file with no log is
// unused, a log with no key digests with plain SHA-256; a log it cannot
// open is an error.
func TestSetupWarnings(t *testing.T) {
	w, _, warnings, err := Setup("", "/etc/key", io.Discard, Options{})
	if err != nil || w != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "it is unused") {
		t.Errorf("a key file without a log: %v, %q, %v", w, warnings, err)
	}
	w, d, warnings, err := Setup(filepath.Join(t.TempDir(), "audit.log"), "", io.Discard, Options{})
	if err != nil || w == nil || d == nil || len(warnings) != 1 || !strings.Contains(warnings[0], "plain SHA-256") {
		t.Fatalf("a log without a key: %v, %q, %v", w, warnings, err)
	}
	w.Close()
	if _, _, _, err := Setup(filepath.Join(t.TempDir(), "no", "such", "audit.log"), "", io.Discard, Options{}); err == nil {
		t.Error("a log in a folder that does not exist: no error")
	}
}
