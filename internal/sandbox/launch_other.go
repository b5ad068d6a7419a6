//go:build !linux

package sandbox

// DetectABI is 0: Landlock is Linux's.
func DetectABI() int { return 0 }

// enforcement is nothing: the sandbox is Linux's (on FreeBSD the jail is
// the sandbox), the registry refuses "sandbox" elsewhere, and the launcher
// refuses to start anything off Linux.
func (p *Plan) enforcement() []string { return nil }
