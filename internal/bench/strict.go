package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// buildNoStrict builds colibri-mcp with the build tag nostrict (strict
// reading compiled out: internal/strict/reading_off.go) into dir with goBin, from the
// module colibri's source is in: the binary the strict row compares the
// one under test with. It is built here only, never installed.
func buildNoStrict(goBin, dir string) (string, error) {
	out := filepath.Join(dir, "colibri-mcp-nostrict")
	cmd := exec.Command(goBin, "build", "-trimpath", "-tags", "nostrict", "-o", out, "./cmd/colibri-mcp")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building colibri-mcp with -tags nostrict (run the bench from the repository's root): %w", err)
	}
	return out, nil
}

// strictAB measures what strict reading costs on a size-byte echo: the
// same call through colibri as built (strict reading on both faces and of
// the hosted server's messages) and through nostrict, the same source
// built with strict reading compiled out, each with its own persistent
// server, alternating; and the CPU each colibri process spent on the
// measured calls (/proc/PID/stat), which a loaded machine disturbs less
// than the wall time.
func strictAB(colibri, nostrict string, t target, face string, env []string, n, size int) error {
	ctx := context.Background()
	msg := strings.Repeat("0123456789abcdef", size/16+1)[:size]
	big := t
	big.toolArg = map[string]any{"message": msg}
	type side struct {
		cs  *mcp.ClientSession
		pid int
		cpu time.Duration
	}
	start := func(bin string) (*side, func(), error) {
		cs, pid, cleanup, err := startFace(bin, t, "persistent", face, env)
		if err != nil {
			return nil, nil, err
		}
		return &side{cs: cs, pid: pid}, cleanup, nil
	}
	on, stopOn, err := start(colibri)
	if err != nil {
		return err
	}
	defer stopOn()
	off, stopOff, err := start(nostrict)
	if err != nil {
		return err
	}
	defer stopOff()
	measured := false
	call := func(s *side) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			before := cpuTime(s.pid)
			d, err := colibriCall(ctx, s.cs, big)()
			if measured {
				s.cpu += cpuTime(s.pid) - before
			}
			return d, err
		}
	}
	// Two unmeasured rounds each (the warm process, colibri's buffers).
	if _, _, err := alternate(2, 0, 0, call(on), call(off)); err != nil {
		return err
	}
	measured = true
	a, b, err := alternate(0, n, 0, call(on), call(off))
	if err != nil {
		return err
	}
	ma, mb := quantile(a, 0.5), quantile(b, 0.5)
	pa, pb := quantile(a, 0.9), quantile(b, 0.9)
	row := "strict"
	fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s   CPU/call %s\n", t.name, face, row, "strict reading", len(a), dur(ma), dur(pa), ms(on.cpu/time.Duration(n)))
	fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s   CPU/call %s\n", t.name, face, row, "nostrict build", len(b), dur(mb), dur(pb), ms(off.cpu/time.Duration(n)))
	cpuRatio := 0.0
	if off.cpu > 0 {
		cpuRatio = float64(on.cpu) / float64(off.cpu)
	}
	fmt.Printf("%-11s %-6s %-6s %-22s %5s %10.3f %10.3f   CPU %.3f (+%s median; bound 1.10)\n\n", t.name, face, row, "ratio strict/nostrict", "", float64(ma)/float64(mb), float64(pa)/float64(pb), cpuRatio, dur(ma-mb))
	return nil
}
