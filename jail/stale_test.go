package jail

import (
	"reflect"
	"testing"
)

func TestStale(t *testing.T) {
	alive := map[int]bool{200: true}
	listed := "mcp0\ncolibri_100_1\ncolibri_100_2\ncolibri_200_1\ncolibri_300_7\ncolibri_x_1\ncolibri_100\ncolibri_100_1a\nother_100_1\ncolibri_0_1\n"
	got := Stale(listed, 300, func(pid int) bool { return alive[pid] })
	want := []string{"colibri_100_1", "colibri_100_2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stale = %v, want %v (a live colibri's, its own, a persistent jail and names not colibri's kept)", got, want)
	}
	if got := Stale("", 1, func(int) bool { return false }); got != nil {
		t.Errorf("nothing listed: %v", got)
	}
	for _, name := range want {
		if _, err := Remove(name, PrivMdo, ""); err != nil {
			t.Errorf("Remove(%s): %v", name, err)
		}
	}
}
