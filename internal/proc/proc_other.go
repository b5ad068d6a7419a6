//go:build !linux && !freebsd

package proc

// ProtectSelf has no equivalent here.
func ProtectSelf() error { return ErrUnsupported }

// AcquireReaper has no equivalent here: orphans go to init.
func AcquireReaper() error { return ErrUnsupported }

// killDescendants cannot trace descendants here: KillTree signals the
// process group only.
func killDescendants(int) (int, error) { return 0, nil }

func children() []int { return nil }

func endSubtrees([]int) {}
