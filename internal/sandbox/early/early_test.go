package early

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	prog := []Insn{{Code: 0x20, K: 4}, {Code: 0x15, Jt: 1, Jf: 0, K: 0xc000003e}, {Code: 0x6, K: 0x7fff0000}}
	args := []string{"/bin/colibri", Marker, "tmp=/s/t", "home=/s/h", "r=/a b", "r=/c=d", "w=/w", "d=/dev/null", "u=/run/pg/.s.PGSQL.5432",
		"net=1", "mem=512", "cpu=3", "abi=7", "ll=ffff,3,3", "rights=w,4007,7fff", "bpf=" + EncodeFilter(prog),
		End, "/bin/srv", "--", Marker}
	p, err := Parse(args)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tmp != "/s/t" || p.Home != "/s/h" || !slices.Equal(p.Read, []string{"/a b", "/c=d"}) || !slices.Equal(p.Write, []string{"/w"}) ||
		!slices.Equal(p.Devices, []string{"/dev/null"}) || !slices.Equal(p.Unix, []string{"/run/pg/.s.PGSQL.5432"}) || !p.Net || p.MemoryMB != 512 || p.CPUSeconds != 3 || p.ABI != 7 ||
		p.Ruleset != [3]uint64{0xffff, 3, 3} || p.Rights[KindWrite] != [2]uint64{0x4007, 0x7fff} || p.Rights[KindRead] != [2]uint64{} ||
		len(p.Filters) != 1 || !slices.Equal(p.Filters[0], prog) || !slices.Equal(p.Argv, []string{"/bin/srv", "--", Marker}) {
		t.Errorf("%+v", p)
	}
	for _, bad := range [][]string{
		{"/bin/colibri", "serve"},
		{"/bin/colibri", Marker, "tmp=/t", "/bin/srv"},                        // no end of the plan
		{"/bin/colibri", Marker, "tmp=/t", End},                               // no command
		{"/bin/colibri", Marker, "tmp=/t", End, "srv"},                        // relative
		{"/bin/colibri", Marker, "mem=-1", End, "/bin/srv"},                   // not a number
		{"/bin/colibri", Marker, "mem=99999999999999999999", End, "/bin/srv"}, // too long
		{"/bin/colibri", Marker, "ll=ffff,3", End, "/bin/srv"},                // one short
		{"/bin/colibri", Marker, "ll=ffff,3,3,3", End, "/bin/srv"},            // one over
		{"/bin/colibri", Marker, "rights=x,1,1", End, "/bin/srv"},             // no such kind
		{"/bin/colibri", Marker, "bpf=0020", End, "/bin/srv"},                 // a piece of an instruction
		{"/bin/colibri", Marker, "bpf=00200000000000zz", End, "/bin/srv"},     // not hex
		{"/bin/colibri", Marker, "what=1", End, "/bin/srv"},                   // no such key
		{"/bin/colibri", Marker, "tmp", End, "/bin/srv"},                      // no value
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
