package proc

import (
	"os"
	"os/exec"
	"slices"
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
	got, ok := taskChildren()
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
