package proc

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// The children read from the threads' "children" files are the children
// the whole process table names.
func TestChildrenFromTasks(t *testing.T) {
	var cmds []*exec.Cmd
	for range 3 {
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	defer func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}()
	got, ok := stableTaskChildren()
	if !ok {
		t.Log("this kernel has no /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN): children reads the table")
		got = children()
	}
	var want []int
	for p, pp := range table() {
		if pp == os.Getpid() {
			want = append(want, p)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("children from the tasks %v, from the table %v", got, want)
	}
	for _, c := range cmds {
		if !slices.Contains(got, c.Process.Pid) {
			t.Errorf("child %d missing from %v", c.Process.Pid, got)
		}
	}
}

// Children that are reaped while the list is read (other requests' servers
// ending) shift the kernel's position in /proc/PID/task/TID/children: the
// kernel documents the file as exact only while the task and its children
// are stopped. Every child that lives throughout is listed by every call.
func TestChildrenWhileOthersAreReaped(t *testing.T) {
	const pairs = 150
	var stay []*exec.Cmd
	var goes []*exec.Cmd
	var closers []func() error
	defer func() {
		for _, c := range append(stay, goes...) {
			c.Process.Kill()
			c.Wait()
		}
	}()
	// Interleaved, so that a child that goes sits before one that stays;
	// from one thread, so that they are one file, read in several reads.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for range pairs {
		s := exec.Command("sleep", "60")
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		stay = append(stay, s)
		g := exec.Command("cat")
		w, err := g.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Start(); err != nil {
			t.Fatal(err)
		}
		goes = append(goes, g)
		closers = append(closers, w.Close)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k, g := range goes {
			closers[k]()
			g.Wait()
		}
	}()
	var missed, calls atomic.Int64
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got := children()
				calls.Add(1)
				for _, s := range stay {
					if !slices.Contains(got, s.Process.Pid) {
						missed.Add(1)
						break
					}
				}
			}
		})
	}
	readers.Wait()
	if missed.Load() > 0 {
		t.Errorf("children that lived throughout were missing from %d of %d lists", missed.Load(), calls.Load())
	}
}
