package upver

import "testing"

func TestBook(t *testing.T) {
	b := New()
	if v := b.Ask("a"); v != Modern {
		t.Errorf("an unknown entry: %s, want a probe (%s)", v, Modern)
	}
	b.Learn("a", "1", Legacy)
	if v := b.Ask("a"); v != Legacy {
		t.Errorf("a legacy entry: %s", v)
	}
	b.Learn("a", "1", Legacy) // the same server again
	if v := b.Ask("a"); v != Legacy {
		t.Errorf("a legacy entry, seen again: %s", v)
	}
	b.Learn("a", "2", Legacy) // upgraded: probe once more
	if v := b.Ask("a"); v != Modern {
		t.Errorf("a legacy entry whose server changed version: %s, want a probe", v)
	}
	b.Learn("b", "1", Modern)
	if v := b.Ask("b"); v != Modern {
		t.Errorf("a modern entry: %s", v)
	}
	long := string(make([]byte, 1<<20))
	b.Learn("c", long, Legacy)
	if got := len(b.m["c"].serverVersion); got > maxVersionBytes {
		t.Errorf("a %d-byte server version kept whole (%d)", len(long), got)
	}
	for i := range maxEntries + 10 {
		b.Learn(string(rune(i)), "1", Legacy)
	}
	if len(b.m) > maxEntries {
		t.Errorf("the book grew to %d entries", len(b.m))
	}
}
