package bulk

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// Owner is one request of a caller's, which owns the references lifted from
// it and from the answers to its call (see the package's Ownership). It
// holds them while anyone holds it; the last to let go releases them.
//
//	o := t.Own(refs)            // the face: one hold, until Done
//	defer o.Done()
//	…                           // go-sdk runs the call, whose middleware joins:
//	ctx, leave, err := t.Join(ctx, args) // the call: a hold until it has returned and ctx has ended
//	defer leave()
//
// Its fields are guarded by its table's mutex.
type Owner struct {
	t     *Table
	holds int
	refs  []Ref
}

type ownerKey struct{}

// Own returns a new owner of refs (just lifted from a request's message),
// held once: by the face that read the request, which lets go with Done.
// Refs released already are left out. A nil t returns a nil Owner, whose
// methods do nothing.
func (t *Table) Own(refs []Ref) *Owner {
	if t == nil {
		return nil
	}
	o := &Owner{t: t, holds: 1}
	t.mu.Lock()
	o.adoptLocked(refs)
	t.mu.Unlock()
	return o
}

// adoptLocked makes refs o's; t.mu is held.
func (o *Owner) adoptLocked(refs []Ref) {
	for _, r := range refs {
		if _, live := o.t.entries[r]; live {
			o.t.owners[r] = o
			o.refs = append(o.refs, r)
		}
	}
}

// Done lets go of one hold on o: the face's (Own), or one of the two a
// call takes (Join lets go of them itself); the last releases what o owns.
// Each hold is let go once.
func (o *Owner) Done() {
	if o == nil {
		return
	}
	o.t.mu.Lock()
	o.holds--
	if o.holds > 0 {
		o.t.mu.Unlock()
		return
	}
	refs := o.refs
	o.refs = nil
	o.t.releaseLocked(refs)
	ended := o.t.ownerEnded
	o.t.mu.Unlock()
	if ended != nil {
		ended()
	}
}

// Live reports whether o is still held (false for a nil Owner).
func (o *Owner) Live() bool {
	if o == nil {
		return false
	}
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	return o.holds > 0
}

// Table is o's table (nil for a nil Owner).
func (o *Owner) Table() *Table {
	if o == nil {
		return nil
	}
	return o.t
}

// Adopt makes refs o's (the strings of a hosted answer to o's call). If o
// is let go already, Adopt releases them at once and returns false; a nil
// Owner adopts nothing and returns false: the caller keeps the refs.
func (o *Owner) Adopt(refs []Ref) bool {
	if o == nil {
		return false
	}
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	if o.holds == 0 {
		o.t.releaseLocked(refs)
		return false
	}
	o.adoptLocked(refs)
	return true
}

// Hold takes one more hold on o, for a call that outlives the request it
// came with (a 2026-07-28 caller's continuation, answered over several
// requests: tools/caller); release lets go of it, and may be called more
// than once. A nil Owner, or one let go already, takes none.
func (o *Owner) Hold() (release func()) {
	if o == nil {
		return func() {}
	}
	o.t.mu.Lock()
	defer o.t.mu.Unlock()
	if o.holds == 0 {
		return func() {}
	}
	o.holds++
	return sync.OnceFunc(o.Done)
}

// OwnerFrom is the owner ctx carries (Join), or nil.
func OwnerFrom(ctx context.Context) *Owner {
	o, _ := ctx.Value(ownerKey{}).(*Owner)
	return o
}

// Join is how a call holds its request: the owner of the references msg
// (the call's arguments, as go-sdk was handed them) holds them until the
// call has returned (leave) and ctx is done, whichever comes last, and the
// returned context carries it. Both count: go-sdk ends ctx only after the
// answer is written, which is after the call returns; but a cancelled call
// sees ctx end first, and still runs (it is audited, with a digest of its
// arguments) until it returns. A call whose arguments carry no reference
// gets an owner of its own, for its answer's strings. With a nil t, Join
// returns ctx as it is. leave is never nil, and may be called more than
// once.
//
// When msg refers to a string the table has released (its request was let
// go before the call began: an HTTP caller gone), Join returns an error
// wrapping ErrReleased, and takes no hold: the call must not run, since
// what it would be sent is gone. The error names the reference's id, never
// its marker.
func (t *Table) Join(ctx context.Context, msg []byte) (_ context.Context, leave func(), _ error) {
	if t == nil {
		return ctx, func() {}, nil
	}
	refs := t.refsIn(msg)
	t.mu.Lock()
	var held []*Owner
	for _, r := range refs {
		if _, live := t.entries[r]; !live {
			t.mu.Unlock()
			return ctx, func() {}, fmt.Errorf("bulk: reference %d: %w", r, ErrReleased)
		}
		if o := t.owners[r]; o != nil && !contains(held, o) {
			held = append(held, o)
		}
	}
	if len(held) == 0 {
		held = append(held, &Owner{t: t})
	}
	for _, o := range held {
		o.holds += 2 // one let go when ctx ends, one by leave
		context.AfterFunc(ctx, o.Done)
	}
	t.mu.Unlock()
	leave = sync.OnceFunc(func() {
		for _, o := range held {
			o.Done()
		}
	})
	return context.WithValue(ctx, ownerKey{}, held[0]), leave, nil
}

func contains(owners []*Owner, o *Owner) bool {
	for _, x := range owners {
		if x == o {
			return true
		}
	}
	return false
}

// refsIn is the references of t that msg holds as whole literals (quote,
// marker, id, quote), issued ones only. Anything else carrying the marker
// is Lower's to refuse.
func (t *Table) refsIn(msg []byte) []Ref {
	marker := []byte(t.marker)
	var refs []Ref
	for i := 0; ; {
		k := bytes.Index(msg[i:], marker)
		if k < 0 {
			return refs
		}
		at := i + k
		i = at + len(marker)
		end := bytes.IndexByte(msg[i:], '"')
		if at == 0 || msg[at-1] != '"' || end < 0 {
			continue
		}
		r, ok := parseID(msg[i : i+end])
		t.mu.Lock()
		issued := ok && uint64(r) <= t.next
		t.mu.Unlock()
		if issued {
			refs = append(refs, r)
		}
	}
}
