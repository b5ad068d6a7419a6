package proc

import (
	"os"
	"testing"
)

// Once Wait has reaped a child its pid is free, and a child started before
// Reaped runs may have it: Reaped forgets the reaped process, not the pid,
// so the new child stays colibri's own and is never taken for an orphan
// (ReapAdopted kills those). Two handles of one pid play the two children.
func TestReapedForgetsTheProcessNotItsPid(t *testing.T) {
	old, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	reused, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	remember(reused) // started with the pid old had
	defer Reaped(reused)
	Reaped(old) // old's waiter, late
	if !isOwn(reused.Pid) {
		t.Fatal("the late Reaped of a reaped child forgot the child that has its pid now")
	}
	Reaped(reused)
	if isOwn(reused.Pid) {
		t.Error("Reaped did not forget the child")
	}
}
