// Package spare keeps processes started ahead of the requests that will use
// them (docs/registry.md#spare-processes-ready-before-the-request): for each registry entry with "spare": N, up
// to N started processes that nothing has been sent to, handed out one per
// request (the request then runs as any per-request one, and tears the
// process down) and replaced in the background.
//
// It knows nothing of MCP, of the registry or of how a process is started:
// its owner (host) gives it Start, which starts one process exactly as a
// request's would be and takes a process slot without waiting for one, and
// Discard, which ends one and gives its slot back.
//
//	k := spare.New(spare.Options[*proc, *registry.Server]{Start: …, Discard: …, Same: …})
//	k.Sync([]spare.Entry[*registry.Server]{{Name: "demo", Want: 1, Idle: 5 * time.Minute, Spec: srv}}, true)
//	p, ok, err := k.Take(entry) // ok: a started process, nothing sent to it yet
//
// A spare that exits before a request takes it is replaced after a back-off
// that grows with each exit in a row; after Threshold of them the entry's
// circuit opens (Take fails with *OpenError, no spare starts) for a
// cool-down that doubles up to CooldownMax. So a server that dies at start
// never respawns in a loop.
package spare

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Process is a started process, as the keeper sees it.
type Process interface {
	// Done is closed once the process has ended.
	Done() <-chan struct{}
}

// Entry is one server whose spares are kept.
type Entry[S any] struct {
	Name string
	// Want is how many spares to keep ready (0 keeps none).
	Want int
	// Idle stops the spares after this long without a request; the next
	// request starts them again.
	Idle time.Duration
	// Early: a spare that exits within this long of its start is a failure
	// of the server's (it died at start); a later exit is only replaced.
	Early time.Duration
	// Spec is what Start starts (the registry entry).
	Spec S
}

// ErrNoSlot is what Start returns when no process slot is free (or a
// request is waiting for one): the spare is not started, and no failure is
// counted. The keeper tries again after NoSlotRetry, or on the next request.
var ErrNoSlot = errors.New("no free process slot")

// OpenError is Take's failure while an entry's circuit is open: its spares
// exited early Failures times in a row, and none starts before Until.
type OpenError struct {
	Failures int
	Until    time.Time
	Last     error // the last spare's end: its status and stderr tail
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("the server's spare processes exited %d times in a row before a request took one; colibri waits %s before starting another (last: %v)",
		e.Failures, time.Until(e.Until).Round(time.Millisecond), e.Last)
}

func (e *OpenError) Unwrap() error { return e.Last }

// Options configure a Keeper. Start, Discard and Same are required.
type Options[P Process, S any] struct {
	// Start starts one spare of spec. It must not wait for a process slot:
	// it returns ErrNoSlot when none is free.
	Start func(name string, spec S) (P, error)
	// Discard ends p and its whole tree and gives back its slot; it may
	// block until p is reaped.
	Discard func(p P)
	// Died describes the end of p, a spare that exited before a request
	// took it (its status and last words).
	Died func(p P) error
	// Same reports whether two specs start the same process (an edited
	// entry's spares are discarded).
	Same func(a, b S) bool
	// Backoff is the wait before replacing a spare after the n-th early
	// exit in a row.
	Backoff func(n int) time.Duration
	// Threshold early exits in a row open the circuit for Cooldown,
	// doubling each time up to CooldownMax.
	Threshold             int
	Cooldown, CooldownMax time.Duration
	// NoSlotRetry is how soon a spare that found no free slot is tried
	// again (default 1 s).
	NoSlotRetry time.Duration
	// Go runs background work that the owner waits for when it closes;
	// nil means a plain goroutine.
	Go func(func())
	// Log receives the keeper's lines; nil discards them.
	Log *slog.Logger
}

// Keeper keeps the spares of every entry. It is safe for concurrent use.
type Keeper[P Process, S any] struct {
	o Options[P, S]

	mu     sync.Mutex
	sets   map[string]*set[P, S]
	counts map[string]*Counts
	closed bool
	// readied is closed (and replaced) each time a spare becomes ready: a
	// request waiting for a process slot wakes to take that spare's slot.
	readied chan struct{}
}

// Counts are a server's requests that found a spare, and those that did not.
type Counts struct{ Hits, Misses uint64 }

type set[P Process, S any] struct {
	e        Entry[S]
	ready    []*one[P]
	starting int
	dormant  bool // stopped after Idle without a request; the next one wakes it
	gone     bool // discarded: the entry was edited or removed, or the keeper closed
	used     uint64
	idle     *time.Timer
	retry    *time.Timer // a refill due later (back-off, cool-down, no slot)

	startErrs int // Start failures in a row
	failures  int // early exits in a row
	last      error
	openUntil time.Time
	cooldown  time.Duration
}

type one[P Process] struct {
	p       P
	started time.Time
	claimed chan struct{} // closed when taken or discarded: its watcher stops
}

// New returns a Keeper with o, defaults filled in.
func New[P Process, S any](o Options[P, S]) *Keeper[P, S] {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Go == nil {
		o.Go = func(f func()) { go f() }
	}
	if o.Backoff == nil {
		o.Backoff = func(int) time.Duration { return time.Second }
	}
	if o.Threshold <= 0 {
		o.Threshold = 3
	}
	if o.Cooldown <= 0 {
		o.Cooldown = time.Second
	}
	if o.CooldownMax < o.Cooldown {
		o.CooldownMax = max(o.Cooldown, time.Minute)
	}
	if o.NoSlotRetry <= 0 {
		o.NoSlotRetry = time.Second
	}
	return &Keeper[P, S]{o: o, sets: map[string]*set[P, S]{}, counts: map[string]*Counts{}, readied: make(chan struct{})}
}

// Sync makes the kept entries those of entries with Want > 0: the spares
// of an entry no longer there, or whose spec changed, are discarded; with
// start, an entry not kept yet starts its spares now (else on its first
// request). A dormant entry stays dormant.
func (k *Keeper[P, S]) Sync(entries []Entry[S], start bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	keep := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.Want <= 0 {
			continue
		}
		keep[e.Name] = true
		s := k.sets[e.Name]
		switch {
		case s != nil && k.o.Same(s.e.Spec, e.Spec):
			k.update(s, e)
		case s != nil || start:
			k.replace(s, e)
		}
	}
	for name, s := range k.sets {
		if !keep[name] {
			delete(k.sets, name)
			k.drop(s)
		}
	}
}

// Take hands out one ready spare of e (ok), or none: then the request
// starts its own process. Either way the owner calls Refill once the
// request is answered. While e's circuit is open it fails with *OpenError.
func (k *Keeper[P, S]) Take(e Entry[S]) (p P, ok bool, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed || e.Want <= 0 {
		return p, false, nil
	}
	s := k.sets[e.Name]
	switch {
	case s == nil || !k.o.Same(s.e.Spec, e.Spec):
		s = k.replace(s, e)
	default:
		k.update(s, e)
	}
	s.used++
	k.armIdle(s)
	if k.open(s) {
		return p, false, &OpenError{Failures: s.failures, Until: s.openUntil, Last: s.last}
	}
	if s.dormant {
		s.dormant = false
		k.o.Log.Info("spares started again on a request", "server", e.Name, "spare", e.Want)
	}
	c := k.count(e.Name)
	for len(s.ready) > 0 {
		o := s.ready[0]
		s.ready = s.ready[1:]
		select {
		case <-o.p.Done():
			continue // it died: its watcher counts it and ends it
		default:
		}
		close(o.claimed)
		s.failures, s.cooldown = 0, 0 // it lived until it was needed
		c.Hits++
		return o.p, true, nil
	}
	c.Misses++
	return p, false, nil
}

// Refill starts the spares that server lacks, in the background. The owner
// calls it once a request that took one (or found none) has its answer:
// a replacement started at once would compete for the CPU with the very
// request that took its predecessor (a Node start is ~300 ms of CPU).
func (k *Keeper[P, S]) Refill(server string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.sets[server]; s != nil {
		k.refill(s)
	}
}

// Evict discards one ready spare (of any entry) and reports whether it did,
// once Discard has given its slot back: a request that finds no free slot
// takes a spare's rather than wait. Spares never starve requests.
func (k *Keeper[P, S]) Evict() bool {
	k.mu.Lock()
	var victim *one[P]
	var from *set[P, S]
	for _, s := range k.sets {
		if len(s.ready) > 0 && (from == nil || len(s.ready) > len(from.ready)) {
			from = s
		}
	}
	if from != nil {
		victim = from.ready[len(from.ready)-1]
		from.ready = from.ready[:len(from.ready)-1]
		close(victim.claimed)
		// Replaced later: no slot is free now, and a request is waiting.
		k.later(from, k.o.NoSlotRetry)
	}
	k.mu.Unlock()
	if victim == nil {
		return false
	}
	k.o.Log.Debug("spare discarded: a request needs its process slot", "server", from.e.Name)
	k.o.Discard(victim.p)
	return true
}

// Readied returns a channel closed when a spare next becomes ready. Take
// it before Evict: a spare started between the two then wakes the waiter.
func (k *Keeper[P, S]) Readied() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.readied
}

// Ready is how many spares of server are ready now.
func (k *Keeper[P, S]) Ready(server string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.sets[server]; s != nil {
		return len(s.ready)
	}
	return 0
}

// Starting is how many spares of server are being started now: decided
// on, their Start not returned yet.
func (k *Keeper[P, S]) Starting(server string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.sets[server]; s != nil {
		return s.starting
	}
	return 0
}

// Open reports server's circuit while it is open: how it last failed.
func (k *Keeper[P, S]) Open(server string) *OpenError {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.sets[server]
	if s == nil || s.failures < k.o.Threshold || !time.Now().Before(s.openUntil) {
		return nil
	}
	return &OpenError{Failures: s.failures, Until: s.openUntil, Last: s.last}
}

// Counts returns server's hits and misses so far.
func (k *Keeper[P, S]) Counts(server string) Counts {
	k.mu.Lock()
	defer k.mu.Unlock()
	if c := k.counts[server]; c != nil {
		return *c
	}
	return Counts{}
}

// Close discards every spare and starts none again. Spares still starting
// are discarded when their start returns (on the owner's Go).
func (k *Keeper[P, S]) Close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	for name, s := range k.sets {
		delete(k.sets, name)
		k.drop(s)
	}
}

func (k *Keeper[P, S]) count(name string) *Counts {
	c := k.counts[name]
	if c == nil {
		c = &Counts{}
		k.counts[name] = c
	}
	return c
}

// replace discards old (if any) and keeps e from now on (k.mu held).
func (k *Keeper[P, S]) replace(old *set[P, S], e Entry[S]) *set[P, S] {
	if old != nil {
		k.drop(old)
		k.o.Log.Info("registry entry changed; its spares were discarded", "server", e.Name)
	}
	s := &set[P, S]{e: e}
	k.sets[e.Name] = s
	k.armIdle(s)
	k.refill(s)
	return s
}

// update takes e's new Want and Idle for s, whose spec is the same
// (k.mu held).
func (k *Keeper[P, S]) update(s *set[P, S], e Entry[S]) {
	s.e.Spec = e.Spec // the same process; the newer value compares faster
	if s.e.Want == e.Want && s.e.Idle == e.Idle {
		return
	}
	s.e.Want, s.e.Idle, s.e.Early = e.Want, e.Idle, e.Early
	for len(s.ready) > s.e.Want {
		k.discard(s.ready[len(s.ready)-1])
		s.ready = s.ready[:len(s.ready)-1]
	}
	k.armIdle(s)
	k.refill(s)
}

// drop discards every spare of s for good (k.mu held).
func (k *Keeper[P, S]) drop(s *set[P, S]) {
	s.gone = true
	k.stopSpares(s)
	if s.idle != nil {
		s.idle.Stop()
	}
}

// stopSpares discards s's ready spares and its pending refill (k.mu held).
func (k *Keeper[P, S]) stopSpares(s *set[P, S]) {
	for _, o := range s.ready {
		k.discard(o)
	}
	s.ready = nil
	if s.retry != nil {
		s.retry.Stop()
		s.retry = nil
	}
}

// discard ends o in the background (k.mu held).
func (k *Keeper[P, S]) discard(o *one[P]) {
	close(o.claimed)
	k.o.Go(func() { k.o.Discard(o.p) })
}

// armIdle (re)starts s's idle timer (k.mu held).
func (k *Keeper[P, S]) armIdle(s *set[P, S]) {
	if s.idle != nil {
		s.idle.Stop()
	}
	used := s.used
	s.idle = time.AfterFunc(s.e.Idle, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if s.gone || s.dormant || s.used != used {
			return
		}
		s.dormant = true
		k.o.Log.Info("spares idle; stopping them until the next request", "server", s.e.Name, "idle_timeout", s.e.Idle)
		k.stopSpares(s)
	})
}

// refill starts spares until s has Want of them, ready or starting, unless
// it is dormant, discarded, cooling down or waiting to retry (k.mu held).
func (k *Keeper[P, S]) refill(s *set[P, S]) {
	if k.closed || s.gone || s.dormant || s.retry != nil {
		return
	}
	if k.open(s) {
		return
	}
	for len(s.ready)+s.starting < s.e.Want {
		s.starting++
		name, spec := s.e.Name, s.e.Spec // read under the lock: update may change them
		k.o.Go(func() { k.start(s, name, spec) })
	}
}

// open reports whether s's circuit is open now (k.mu held).
func (k *Keeper[P, S]) open(s *set[P, S]) bool {
	return s.failures >= k.o.Threshold && time.Now().Before(s.openUntil)
}

// later refills s after d (k.mu held).
func (k *Keeper[P, S]) later(s *set[P, S], d time.Duration) {
	if s.retry != nil || s.gone {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if s.retry == t {
			s.retry = nil
			k.refill(s)
		}
	})
	s.retry = t
}

// start starts one spare of s and keeps it ready. refill decided on it,
// but Go may run it later: by then s's circuit may have opened (another
// spare's early exit), s may be dormant or discarded. That is checked again
// under the lock right before Start, so no spare starts while the circuit
// is open; only a Start already called when it opened still returns.
func (k *Keeper[P, S]) start(s *set[P, S], name string, spec S) {
	k.mu.Lock()
	if k.closed || s.gone || s.dormant || k.open(s) {
		s.starting--
		k.mu.Unlock()
		return // started later by refill: the cool-down's timer, a request's Refill, a wake
	}
	k.mu.Unlock()
	p, err := k.o.Start(name, spec)
	k.mu.Lock()
	defer k.mu.Unlock()
	s.starting--
	switch {
	case errors.Is(err, ErrNoSlot):
		k.later(s, k.o.NoSlotRetry)
		return
	case err != nil:
		// It could not be started at all (an unset ${NAME}, a missing
		// command): each request says why as it starts its own process,
		// and spares are tried again after a growing back-off, never in
		// a loop.
		s.startErrs++
		k.o.Log.Debug("spare not started", "server", s.e.Name, "err", err)
		k.later(s, k.o.Backoff(s.startErrs))
		return
	}
	s.startErrs = 0
	o := &one[P]{p: p, started: time.Now(), claimed: make(chan struct{})}
	if k.closed || s.gone || s.dormant || len(s.ready) >= s.e.Want {
		k.discard(o)
		return
	}
	s.ready = append(s.ready, o)
	close(k.readied)
	k.readied = make(chan struct{})
	go k.watch(s, o)
}

// watch notices a spare that exits before a request takes it.
func (k *Keeper[P, S]) watch(s *set[P, S], o *one[P]) {
	select {
	case <-o.claimed:
		return
	case <-o.p.Done():
	}
	lived := time.Since(o.started)
	err := errors.New("the spare exited")
	if k.o.Died != nil {
		err = k.o.Died(o.p) // its last words may take a moment to read: not under the lock
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	select {
	case <-o.claimed: // discarded meanwhile: ended by whoever did
		return
	default:
	}
	for i, r := range s.ready {
		if r == o {
			s.ready = append(s.ready[:i:i], s.ready[i+1:]...)
			break
		}
	}
	close(o.claimed)
	k.failed(s, o, lived, err)
}

// failed counts o's early exit and replaces it after the back-off, or, for
// a spare that lived past Early, at once (k.mu held; o is claimed).
func (k *Keeper[P, S]) failed(s *set[P, S], o *one[P], lived time.Duration, err error) {
	k.o.Go(func() { k.o.Discard(o.p) })
	if s.gone {
		return
	}
	if s.e.Early > 0 && lived >= s.e.Early {
		k.o.Log.Info("spare exited after a while; replacing it", "server", s.e.Name, "lived", lived.Round(time.Millisecond), "err", err)
		k.refill(s)
		return
	}
	s.failures++
	s.last = err
	k.o.Log.Warn("spare exited before a request took it", "server", s.e.Name, "failures", s.failures, "err", err)
	k.backOff(s)
}

// backOff schedules the next start after s's latest failure: the back-off
// before Threshold failures in a row, the doubling cool-down from then on
// (the circuit is open meanwhile) (k.mu held).
func (k *Keeper[P, S]) backOff(s *set[P, S]) {
	d := k.o.Backoff(s.failures)
	if s.failures >= k.o.Threshold {
		if s.cooldown == 0 {
			s.cooldown = k.o.Cooldown
		} else {
			s.cooldown = min(2*s.cooldown, k.o.CooldownMax)
		}
		d = s.cooldown
		s.openUntil = time.Now().Add(d)
		k.o.Log.Warn("spares keep exiting at start; cooling down", "server", s.e.Name, "failures", s.failures, "cooldown", d, "err", s.last)
	}
	if s.retry != nil {
		s.retry.Stop()
		s.retry = nil
	}
	k.later(s, d)
}
