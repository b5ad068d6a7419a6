package spare

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// fakeProc is a process that exits when told.
type fakeProc struct {
	id   int
	spec string
	at   time.Time // when it started
	exit chan struct{}
	once sync.Once
}

func (p *fakeProc) Done() <-chan struct{} { return p.exit }
func (p *fakeProc) die()                  { p.once.Do(func() { close(p.exit) }) }

// world is a keeper over fake processes, with what it started and ended.
type world struct {
	*Keeper[*fakeProc, string]
	mu        sync.Mutex
	started   []*fakeProc
	discarded map[int]bool
	slots     int // free process slots; Start fails ErrNoSlot at 0
	dieAtOnce bool
	startErr  error
	ready     chan struct{} // a start happened
}

func newWorld(t *testing.T, o Options[*fakeProc, string]) *world {
	w := &world{discarded: map[int]bool{}, slots: 100, ready: make(chan struct{}, 100)}
	o.Start = func(_ string, spec string) (*fakeProc, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		defer func() {
			select {
			case w.ready <- struct{}{}:
			default:
			}
		}()
		if w.startErr != nil {
			return nil, w.startErr
		}
		if w.slots == 0 {
			return nil, ErrNoSlot
		}
		w.slots--
		p := &fakeProc{id: len(w.started) + 1, spec: spec, at: time.Now(), exit: make(chan struct{})}
		if w.dieAtOnce {
			p.die()
		}
		w.started = append(w.started, p)
		return p, nil
	}
	o.Discard = func(p *fakeProc) {
		p.die()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.discarded[p.id] = true
		w.slots++
	}
	o.Same = func(a, b string) bool { return a == b }
	if o.Backoff == nil {
		o.Backoff = func(int) time.Duration { return time.Millisecond }
	}
	w.Keeper = New(o)
	t.Cleanup(w.Close)
	return w
}

func (w *world) count() (started, discarded int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.started), len(w.discarded)
}

func entry(spec string, want int) Entry[string] {
	return Entry[string]{Name: "s", Want: want, Idle: time.Hour, Spec: spec}
}

// A taken spare is handed out once; the replacement starts on Refill only.
func TestTakeOnceThenRefill(t *testing.T) {
	w := newWorld(t, Options[*fakeProc, string]{})
	w.Sync([]Entry[string]{entry("a", 1)}, true)
	testwait.Eventually(t, "a spare", func() bool { return w.Ready("s") == 1 })
	p, ok, err := w.Take(entry("a", 1))
	if !ok || err != nil || p.id != 1 {
		t.Fatalf("Take = %v %v %v, want spare 1", p, ok, err)
	}
	if _, ok, _ := w.Take(entry("a", 1)); ok {
		t.Fatal("a spare was handed out twice, or a replacement started before Refill")
	}
	if c := w.Counts("s"); c.Hits != 1 || c.Misses != 1 {
		t.Errorf("counts %+v, want 1 hit and 1 miss", c)
	}
	w.Refill("s")
	testwait.Eventually(t, "the replacement", func() bool { return w.Ready("s") == 1 })
	if started, _ := w.count(); started != 2 {
		t.Errorf("%d started, want 2", started)
	}
}

// Early exits back off, then open the circuit; a Start that fails is not
// an exit and opens nothing.
func TestCircuit(t *testing.T) {
	// In a synctest bubble: the back-offs between the early exits pass on
	// the bubble's clock, with no real wait.
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, Options[*fakeProc, string]{Threshold: 3, Cooldown: time.Hour})
		w.dieAtOnce = true
		w.Sync([]Entry[string]{entry("a", 1)}, true)
		time.Sleep(time.Minute) // three back-offs of 1 ms; the cool-down is an hour
		synctest.Wait()
		if w.Open("s") == nil {
			t.Fatal("the circuit did not open")
		}
		if started, _ := w.count(); started != 3 {
			t.Errorf("%d started before the circuit opened, want 3", started)
		}
		_, _, err := w.Take(entry("a", 1))
		var oe *OpenError
		if !errors.As(err, &oe) || oe.Failures != 3 {
			t.Fatalf("Take = %v, want *OpenError after 3 failures", err)
		}
		w.Refill("s")
		synctest.Wait()
		if started, _ := w.count(); started != 3 {
			t.Errorf("a spare started while the circuit was open")
		}

		w2 := newWorld(t, Options[*fakeProc, string]{Threshold: 1})
		w2.startErr = errors.New("no such command")
		w2.Sync([]Entry[string]{entry("a", 1)}, true)
		<-w2.ready
		synctest.Wait()
		if w2.Open("s") != nil {
			t.Error("a failed Start opened the circuit")
		}
	})
}

// Spares that exit at start are replaced after Backoff(n), n the early
// exits in a row; from Threshold on, after a cool-down that doubles up to
// CooldownMax, the circuit open meanwhile. (In a synctest bubble: every
// start is at its exact time, with no real wait.)
func TestBackoffThenCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, Options[*fakeProc, string]{Threshold: 3, Cooldown: time.Second, CooldownMax: 2 * time.Second,
			Backoff: func(n int) time.Duration { return time.Duration(n) * 100 * time.Millisecond }})
		w.dieAtOnce = true
		begin := time.Now()
		w.Sync([]Entry[string]{entry("a", 1)}, true)
		time.Sleep(6 * time.Second)
		synctest.Wait()
		w.mu.Lock()
		var at []time.Duration
		for _, p := range w.started {
			at = append(at, p.at.Sub(begin))
		}
		w.mu.Unlock()
		ms := time.Millisecond
		// 100 and 200 ms of back-off, then cool-downs of 1, 2 and 2 s.
		if want := []time.Duration{0, 100 * ms, 300 * ms, 1300 * ms, 3300 * ms, 5300 * ms}; !slices.Equal(at, want) {
			t.Errorf("spares started at %v, want %v", at, want)
		}
		if w.Open("s") == nil {
			t.Error("the circuit is closed while spares keep exiting at start")
		}
	})
}

// Evict hands a spare's slot to a request; an edit discards and restarts;
// removal and Close discard everything.
func TestEvictEditRemoveClose(t *testing.T) {
	w := newWorld(t, Options[*fakeProc, string]{NoSlotRetry: time.Hour})
	w.Sync([]Entry[string]{entry("a", 2)}, true)
	testwait.Eventually(t, "two spares", func() bool { return w.Ready("s") == 2 })
	if !w.Evict() || w.Ready("s") != 1 {
		t.Fatalf("Evict did not take a spare (ready %d)", w.Ready("s"))
	}
	if _, d := w.count(); d != 1 {
		t.Errorf("%d discarded after Evict, want 1 (synchronously)", d)
	}
	w.Sync([]Entry[string]{entry("b", 1)}, true) // edited
	testwait.Eventually(t, "the edited entry's spare", func() bool { return w.Ready("s") == 1 })
	testwait.Eventually(t, "the old spares discarded", func() bool { _, d := w.count(); return d == 2 })
	p, ok, _ := w.Take(entry("b", 1))
	if !ok || p.spec != "b" {
		t.Fatalf("after an edit Take = %+v, want a spare of the new spec", p)
	}
	w.Refill("s")
	testwait.Eventually(t, "a spare", func() bool { return w.Ready("s") == 1 })
	w.Sync(nil, true) // removed
	testwait.Eventually(t, "the removed entry's spare discarded", func() bool { return w.Ready("s") == 0 })
	w.Sync([]Entry[string]{entry("b", 3)}, true)
	testwait.Eventually(t, "three spares", func() bool { return w.Ready("s") == 3 })
	w.Close()
	testwait.Eventually(t, "every spare discarded", func() bool {
		started, d := w.count()
		return started == d+1 // the one taken above is the request's to end
	})
}

// Idle spares stop, at Idle after the registry read that started them and
// not before; a request wakes them; a registry read does not. (In a
// synctest bubble: the spare is ready at once, and the idle timer fires at
// its exact time. On the real clock a start slower than Idle, on a loaded
// machine, was stopped before it was ever ready.)
func TestIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld(t, Options[*fakeProc, string]{})
		e := entry("a", 1)
		e.Idle = 20 * time.Millisecond
		w.Sync([]Entry[string]{e}, true)
		time.Sleep(e.Idle - time.Nanosecond)
		synctest.Wait()
		if started, d := w.count(); started != 1 || d != 0 || w.Ready("s") != 1 {
			t.Fatalf("just before Idle: %d started, %d discarded, %d ready; want the spare ready", started, d, w.Ready("s"))
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if _, d := w.count(); d != 1 || w.Ready("s") != 0 {
			t.Fatalf("at Idle: %d discarded, %d ready; want the spare stopped", d, w.Ready("s"))
		}
		w.Sync([]Entry[string]{e}, true)
		synctest.Wait()
		if started, _ := w.count(); started != 1 {
			t.Fatal("a registry read woke idle spares")
		}
		if _, ok, _ := w.Take(e); ok {
			t.Fatal("a spare while idle")
		}
		w.Refill("s")
		synctest.Wait()
		if started, _ := w.count(); started != 2 || w.Ready("s") != 1 {
			t.Errorf("after a request: %d started, %d ready; want the spare again", started, w.Ready("s"))
		}
	})
}

// Concurrent takes, evictions, edits, deaths and Close: every spare ends
// exactly once (taken by one request, or discarded), none twice, and no
// process slot is lost.
func TestConcurrentUse(t *testing.T) {
	w := newWorld(t, Options[*fakeProc, string]{Threshold: 1000, NoSlotRetry: time.Millisecond})
	w.slots = 6
	var taken sync.Map
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 6 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				spec := []string{"a", "b"}[(i/50)%2]
				switch g {
				case 0:
					w.Sync([]Entry[string]{entry(spec, 3)}, true)
				case 1:
					w.Evict()
				case 2:
					w.mu.Lock()
					if n := len(w.started); n > 0 {
						w.started[i%n].die()
					}
					w.mu.Unlock()
				default:
					if p, ok, _ := w.Take(entry(spec, 3)); ok {
						if _, dup := taken.LoadOrStore(p.id, true); dup {
							t.Errorf("spare %d taken twice", p.id)
						}
						w.mu.Lock()
						if w.discarded[p.id] {
							t.Errorf("spare %d taken after it was discarded", p.id)
						}
						w.mu.Unlock()
						p.die()
						w.mu.Lock()
						w.slots++ // the request's teardown gives the slot back
						w.mu.Unlock()
					}
					w.Refill("s")
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	w.Close()
	testwait.Eventually(t, "every spare ended and every slot back", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		n := 0
		taken.Range(func(k, _ any) bool {
			if w.discarded[k.(int)] {
				t.Errorf("spare %v both taken and discarded", k)
			}
			n++
			return true
		})
		return len(w.discarded)+n == len(w.started) && w.slots == 6
	})
}

// A start that refill decided on before the circuit opened, but that Go ran
// only after, starts nothing: the circuit is checked again right before
// Start. (Go holds the starts here, as a loaded machine may: the second
// spare's start runs once the first spare's exit has opened the circuit.)
func TestNoStartOnceTheCircuitOpened(t *testing.T) {
	var mu sync.Mutex
	var held []func()
	w := newWorld(t, Options[*fakeProc, string]{Threshold: 1, Cooldown: time.Hour, Go: func(f func()) {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, f)
	}})
	runHeld := func() {
		mu.Lock()
		f := held[0]
		held = held[1:]
		mu.Unlock()
		f()
	}
	w.dieAtOnce = true
	w.Sync([]Entry[string]{entry("a", 2)}, true)
	mu.Lock()
	decided := len(held)
	mu.Unlock()
	if decided != 2 {
		t.Fatalf("%d starts decided on, want the 2 spares'", decided)
	}
	runHeld() // the first spare starts and exits at once: the circuit opens
	testwait.Eventually(t, "the circuit did not open", func() bool { return w.Open("s") != nil })
	if n := w.Starting("s"); n != 1 {
		t.Errorf("Starting = %d, want the second spare's", n)
	}
	runHeld() // the second spare's start, decided on before the circuit opened
	if started, _ := w.count(); started != 1 {
		t.Errorf("%d spares started, want 1: one started while the circuit was open", started)
	}
	if n := w.Starting("s"); n != 0 {
		t.Errorf("Starting = %d after every start returned, want 0", n)
	}
	mu.Lock()
	rest := held // the first spare's Discard
	held = nil
	mu.Unlock()
	for _, f := range rest {
		f()
	}
}
