package sandbox

import (
	"slices"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
)

// A call the running architecture lacks (memfd_secret on 32-bit ARM) is
// left out of the filter rather than failing it, and with it every start.
func TestFilterNamesOnlyKnownCalls(t *testing.T) {
	groups := knownOnly([]seccomp.SyscallGroup{
		{Action: seccomp.ActionErrno, Names: []string{"keyctl", "no_such_call"}},
		{Action: seccomp.ActionErrno, NamesWithCondtions: []seccomp.NameWithConditions{{Name: "no_such_call",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: 1}}}}},
	})
	if len(groups) != 1 || !slices.Equal(groups[0].Names, []string{"keyctl"}) {
		t.Fatalf("groups %+v, want keyctl alone", groups)
	}
	p := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}
	if _, err := p.Assemble(); err != nil {
		t.Errorf("the filter does not assemble: %v", err)
	}
}
