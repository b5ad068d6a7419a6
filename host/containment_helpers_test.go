package host_test

import (
	"errors"
	"os"
	"strconv"
	"testing"
)

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func recordedPidsAny(t *testing.T, dir string) []int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, _ := strconv.Atoi(e.Name())
		pids = append(pids, pid)
	}
	t.Logf("%d processes recorded", len(pids))
	return pids
}
