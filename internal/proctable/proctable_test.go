package proctable

import (
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

func TestParsePS(t *testing.T) {
	// FreeBSD's ps -ax -o pid=,ppid=,pgid=,stat= prints right-aligned columns.
	out := "    1     0     1 ILs\n  812     1   812 Ss\n  900   812   812 Z\n 1234   812  1234 R+\n"
	got := parsePS(out)
	want := []proc{{1, 0, 1, false}, {812, 1, 812, false}, {900, 812, 812, true}, {1234, 812, 1234, false}}
	if !slices.Equal(got, want) {
		t.Errorf("parsePS = %+v, want %+v", got, want)
	}
}

// The answers see a real process group: its leader and its child, and
// nothing once it is killed; the ps reader (the BSDs') agrees with this
// platform's reader.
func TestGroupOfARealProcess(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	defer syscall.Kill(-pgid, syscall.SIGKILL)
	var members []int
	for range 500 { // the child sleep appears within a moment
		if members = GroupMembers(pgid); len(members) == 2 {
			break
		}
		exec.Command("true").Run() // yield without sleeping on a clock
	}
	if len(members) != 2 || !slices.Contains(members, pgid) {
		t.Fatalf("GroupMembers(%d) = %v, want the shell and its sleep", pgid, members)
	}
	if !Alive(pgid) || len(Children(pgid)) != 1 {
		t.Errorf("Alive = %v, Children = %v", Alive(pgid), Children(pgid))
	}
	var viaPS []int
	for _, p := range psTable(psSelectAll) {
		if p.pgid == pgid && !p.zombie {
			viaPS = append(viaPS, p.pid)
		}
	}
	slices.Sort(members)
	slices.Sort(viaPS)
	if !slices.Equal(members, viaPS) {
		t.Errorf("ps says group %d is %v, this platform's reader %v", pgid, viaPS, members)
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	cmd.Wait()
	for range 500 {
		if len(GroupMembers(pgid)) == 0 {
			return
		}
		exec.Command("true").Run()
	}
	t.Errorf("group %d still has %v after SIGKILL", pgid, GroupMembers(pgid))
}
