package instance

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSealOpen(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	a := New("a1")
	tok := a.Seal("mrtr", []byte("state"), now.Add(time.Minute))
	if !strings.HasPrefix(tok, "a1~") || !a.Owns(tok) {
		t.Fatalf("token %q does not begin with its instance", tok)
	}
	got, err := a.Open("mrtr", tok, now)
	if err != nil || string(got) != "state" {
		t.Fatalf("Open = %q, %v; want the payload", got, err)
	}
	if tok2 := a.Seal("mrtr", []byte("state"), now.Add(time.Minute)); tok2 != tok {
		t.Fatalf("the same seal twice differs: %q, %q", tok, tok2)
	}
	never := a.Seal("cursor", nil, time.Time{})
	if got, err := a.Open("cursor", never, now.Add(1000*time.Hour)); err != nil || len(got) != 0 {
		t.Fatalf("a token without expiry: %q, %v", got, err)
	}

	for _, c := range []struct {
		name  string
		s     *Sealer
		kind  string
		token string
		at    time.Time
		want  error
	}{
		{"another instance", New("b2"), "mrtr", tok, now, ErrForeign},
		{"a restart of this one", New("a1"), "mrtr", tok, now, ErrStale},
		{"expired", a, "mrtr", tok, now.Add(time.Minute + time.Millisecond), ErrExpired},
		{"another kind", a, "event", tok, now, ErrForged},
		{"payload changed", a, "mrtr", retamper(tok, 2, "AAAAAAAAAAB4"), now, ErrForged},
		{"mac changed", a, "mrtr", retamper(tok, 3, "AAAAAAAAAAAAAAAAAAAAAA"), now, ErrForged},
		{"too long", a, "mrtr", tok + strings.Repeat("x", MaxToken), now, ErrForged},
		{"not a token", a, "mrtr", "a1", now, ErrForged},
		{"extra part", a, "mrtr", tok + "~x", now, ErrForged},
	} {
		if _, err := c.s.Open(c.kind, c.token, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: Open = %v, want %v", c.name, err, c.want)
		}
	}
}

// retamper replaces part i of a token.
func retamper(tok string, i int, with string) string {
	p := strings.Split(tok, sep)
	p[i] = with
	return strings.Join(p, sep)
}

func BenchmarkSealOpen(b *testing.B) {
	s := New("bench")
	now := time.Now()
	payload := []byte(strings.Repeat("p", 120))
	for b.Loop() {
		if _, err := s.Open("mrtr", s.Seal("mrtr", payload, now.Add(time.Minute)), now); err != nil {
			b.Fatal(err)
		}
	}
}
