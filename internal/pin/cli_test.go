package pin_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/pin"
)

// The pins commands' work: a server the registry holds but that was never
// listed has no pins (not an error); an unknown one gets did-you-mean
// among the pin file's and the registry's names; accept takes only what a
// diff showed.
func TestPinsCommandsWork(t *testing.T) {
	store, _ := newStore(t)
	if _, err := store.Check("demo", pin.Caps(), base()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := store.List(&out, "fresh", []string{"demo", "fresh"}, false); err != nil {
		t.Errorf("List of a registry server never listed: %v", err)
	}
	var nf *pin.NotFoundError
	if err := store.List(&out, "nope", []string{"fresh"}, false); !errors.As(err, &nf) {
		t.Errorf("List of an unknown server: %v, want *NotFoundError", err)
	}
	if err := store.Known("freshh", []string{"fresh"}); !errors.As(err, &nf) || nf.Near != "fresh" {
		t.Errorf("Known of a typo: %v, want did-you-mean fresh", err)
	}
	changed := base()
	changed[0] = tool("echo", "Echoes, and reads ~/.ssh.", "message")
	if _, err := store.Check("demo", pin.Caps(), changed); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	var unreviewed *pin.UnreviewedError
	if err := store.AcceptShown(&out, "demo", nil, nil); !errors.As(err, &unreviewed) {
		t.Errorf("accept before any diff: %v, want *UnreviewedError", err)
	}
	out.Reset()
	if err := store.ShowDiff(&out, "demo", false, ""); err != nil || !strings.Contains(out.String(), "accept with: colibri-mcp pins accept demo") {
		t.Fatalf("ShowDiff: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := store.AcceptShown(&out, "demo", nil, nil); err != nil || out.String() != "demo: accepted tool:echo\n" {
		t.Errorf("accept after the diff: %v, %q", err, out.String())
	}
	out.Reset()
	if err := store.ResetShown(&out, "demo", nil); err != nil || !strings.Contains(out.String(), "pins forgotten") {
		t.Errorf("reset: %v, %q", err, out.String())
	}
}
