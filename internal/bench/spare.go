package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"
)

// spareRows measures per-request calls that find a spare (docs/registry.md#spare-processes-ready-before-the-request): one call a second through colibri with "spare": 1 against a
// direct client that spawns, initializes and calls, and against one that
// initializes and calls a process it started a second earlier (the floor of
// a fresh process); bursts with "spare": 2; and the CPU of idle spares.
func spareRows(colibri string, targets []target, env []string, short bool) error {
	n, idle := 20, 60*time.Second
	if short {
		n, idle = 5, 10*time.Second
	}
	fmt.Printf("\nper-request with \"spare\": 1, one call a second: colibri vs a direct client that spawns+initializes+calls (cold)\nand vs one that initializes+calls a process it started a second earlier (prestarted)\n")
	fmt.Printf("%-11s %-22s %5s %10s %10s\n", "server", "measure", "n", "median", "p90")
	for _, t := range targets {
		if err := spareAB(colibri, t, env, n); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
	}
	for _, t := range targets {
		if err := spareBursts(colibri, t, env, map[bool]int{true: 2, false: 5}[short]); err != nil {
			return fmt.Errorf("%s bursts: %w", t.name, err)
		}
	}
	t := targets[len(targets)-1]
	return spareIdle(colibri, t, env, idle)
}

func entryOf(t target, extra map[string]any) map[string]any {
	e := map[string]any{"command": t.command}
	if len(t.args) > 0 {
		e["args"] = t.args
	}
	for k, v := range extra {
		e[k] = v
	}
	return e
}

// direct clients of the comparison.
func directCold(t target, env []string) (time.Duration, error) {
	start := time.Now()
	c := exec.Command(t.command, t.args...)
	c.Env = env
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, noCaps).
		Connect(context.Background(), &mcp.CommandTransport{Command: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return 0, err
	}
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: t.tool, Arguments: t.toolArg})
	d := time.Since(start)
	cs.Close()
	return d, err
}

// prestarted is a process started ahead, its pipes held, nothing written.
type prestarted struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

func prestart(t target, env []string) (*prestarted, error) {
	c := exec.Command(t.command, t.args...)
	c.Env = env
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return &prestarted{cmd: c, stdin: in, stdout: out}, nil
}

// use initializes and calls the prestarted process (timed), then ends it.
func (p *prestarted) use(t target) (time.Duration, error) {
	start := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, noCaps).
		Connect(context.Background(), &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: t.tool, Arguments: t.toolArg})
	}
	d := time.Since(start)
	if cs != nil {
		cs.Close()
	}
	p.cmd.Process.Kill()
	p.cmd.Wait()
	return d, err
}

func spareAB(colibri string, t target, env []string, n int) error {
	in, err := launch(colibri, map[string]any{t.name: entryOf(t, map[string]any{"spare": 1})}, "stdio", env)
	if err != nil {
		return err
	}
	defer in.stop()
	via := callVia(in.cs, t.name, t.tool, t.toolArg)
	var a, cold, pre []time.Duration
	for i := -1; i < n; i++ { // one unmeasured round: the first call may find no spare yet
		began := time.Now()
		p, err := prestart(t, env)
		if err != nil {
			return err
		}
		x, err := timed(via)
		if err != nil {
			return err
		}
		y, err := directCold(t, env)
		if err != nil {
			return err
		}
		time.Sleep(time.Until(began.Add(time.Second)))
		z, err := p.use(t)
		if err != nil {
			return err
		}
		if i >= 0 {
			a, cold, pre = append(a, x), append(cold, y), append(pre, z)
		}
		time.Sleep(time.Until(began.Add(1100 * time.Millisecond))) // one call a second, or a little more
	}
	hits, misses := in.metric(`colibri_spare_hits_total{server="`+t.name+`"}`), in.metric(`colibri_spare_misses_total{server="`+t.name+`"}`)
	row := func(what string, xs []time.Duration) {
		fmt.Printf("%-11s %-22s %5d %10s %10s\n", t.name, what, len(xs), dur(quantile(xs, 0.5)), dur(quantile(xs, 0.9)))
	}
	row("colibri spare:1", a)
	row("direct cold", cold)
	row("direct prestarted", pre)
	fmt.Printf("%-11s %-22s %5s %10.3f %10.3f\n", t.name, "ratio colibri/cold", "", ratio(a, cold, 0.5), ratio(a, cold, 0.9))
	fmt.Printf("%-11s %-22s %5s %10.3f %10.3f   (requests that found a spare: %.0f of %.0f)\n\n", t.name, "ratio colibri/prestarted", "", ratio(a, pre, 0.5), ratio(a, pre, 0.9), hits, hits+misses)
	return nil
}

func ratio(a, b []time.Duration, q float64) float64 {
	return float64(quantile(a, q)) / float64(quantile(b, q))
}

// spareBursts makes bursts of 10 back-to-back calls with "spare": 2, a
// pause of a few seconds between bursts (the spares are back).
func spareBursts(colibri string, t target, env []string, bursts int) error {
	in, err := launch(colibri, map[string]any{t.name: entryOf(t, map[string]any{"spare": 2})}, "stdio", env)
	if err != nil {
		return err
	}
	defer in.stop()
	via := callVia(in.cs, t.name, t.tool, t.toolArg)
	series := `{server="` + t.name + `"}`
	waitReady := func() {
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if in.metric("colibri_spare_processes"+series) >= 2 {
				return
			}
		}
	}
	var lat []time.Duration
	h0, m0 := in.metric("colibri_spare_hits_total"+series), in.metric("colibri_spare_misses_total"+series)
	for range bursts {
		waitReady()
		for range 10 {
			x, err := timed(via)
			if err != nil {
				return err
			}
			lat = append(lat, x)
		}
	}
	hits := in.metric("colibri_spare_hits_total"+series) - h0
	misses := in.metric("colibri_spare_misses_total"+series) - m0
	fmt.Printf("%-11s bursts of 10 back-to-back calls, spare:2, %d bursts: median %s, p90 %s; %.0f%% found a spare (%.0f of %.0f)\n",
		t.name, bursts, dur(quantile(lat, 0.5)), dur(quantile(lat, 0.9)), 100*hits/(hits+misses), hits, hits+misses)
	return nil
}

// spareIdle measures the CPU colibri and 4 idle spares use over d.
func spareIdle(colibri string, t target, env []string, d time.Duration) error {
	in, err := launch(colibri, map[string]any{t.name: entryOf(t, map[string]any{"spare": 4})}, "stdio", env)
	if err != nil {
		return err
	}
	defer in.stop()
	series := `colibri_spare_processes{server="` + t.name + `"}`
	for deadline := time.Now().Add(60 * time.Second); in.metric(series) < 4; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("4 spares never ready")
		}
	}
	time.Sleep(2 * time.Second) // the spares finish loading
	kids := proctable.Children(in.pid)
	before := cpuTime(in.pid)
	var kb []time.Duration
	var rss int64
	for _, k := range kids {
		kb = append(kb, cpuTime(k))
		rss += proctable.Memory(k, "VmRSS")
	}
	time.Sleep(d)
	var spares time.Duration
	for i, k := range kids {
		spares += cpuTime(k) - kb[i]
	}
	fmt.Printf("\nidle: colibri with %d spare %s processes over %s: colibri %.2f CPU s, the spares %.2f CPU s; the spares' RSS %s in all (%s each); colibri's RSS %s\n",
		len(kids), t.name, d, (cpuTime(in.pid) - before).Seconds(), spares.Seconds(), mib(rss), mib(rss/int64(max(1, len(kids)))), mib(proctable.Memory(in.pid, "VmRSS")))
	return nil
}
