// Command bench measures a call-tool through a long-lived colibri-mcp
// session against a direct client that spawns, initializes and calls the same
// server, alternating the two (A/B) in one run, and prints medians, p90 and
// their ratio. `make bench` runs it; docs/benchmarks.md records its figures.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type target struct {
	name    string
	command string
	args    []string
	tool    string
	toolArg map[string]any
	n       int
	pause   time.Duration // between iterations: lets the last process leave
}

func main() {
	if os.Getenv(floorEnv) != "" {
		serveFloor()
		return
	}
	if os.Getenv(egressEnv) != "" {
		serveEgress()
		return
	}
	if target := os.Getenv(relayEnv); target != "" {
		serveRelay(target, os.Stdin, os.Stdout)
		return
	}
	if os.Getenv(stdioRelayEnv) != "" {
		serveStdioRelay(os.Args[1:])
		return
	}
	colibri := flag.String("colibri", "bin/colibri-mcp", "the colibri-mcp binary")
	demo := flag.String("demo", "bin/demo-mcp-server", "the demo server binary")
	peers := flag.String("peers", "testdata/peers", "where server-everything is installed")
	n := flag.Int("n", 40, "iterations per side for server-everything (the demo server gets 5×)")
	soakN := flag.Int("soak", 5000, "sequential calls of the soak")
	rows := flag.String("rows", "", "the parts to run, comma-separated: cold, warm, only, big (with strict), strict, load, soak, sandbox, egress, spare, cost, growth (default: all)")
	nostrict := flag.String("colibri-nostrict", "", "colibri-mcp built with -tags nostrict, for the strict row (default: built by the bench from ./cmd/colibri-mcp)")
	goBin := flag.String("go", "go", "the go command that builds the strict row's -tags nostrict colibri-mcp")
	short := flag.Bool("short", false, "the spare, cost and growth rows in short modes (fewer calls, shorter windows)")
	only := flag.String("only", "", "the same as -rows (ab is cold)")
	warmN := flag.Int("warm", 2000, "calls per side of the warm comparison")
	bigN := flag.Int("big", 10, "calls per side of the 8 MiB comparison")
	bigSize := flag.Int("big-bytes", 8<<20, "the size of the big echo's message")
	faces := flag.String("faces", "stdio,http", "colibri's faces measured in the warm and big rows")
	extraEnv := flag.String("colibri-env", "", "KEY=VALUE pairs, comma-separated, for colibri's own process only, in the cold, warm and big rows (e.g. GOMEMLIMIT=40MiB)")
	flag.Parse()
	if *extraEnv != "" {
		colibriEnv = strings.Split(*extraEnv, ",")
	}
	pinDir, err := os.MkdirTemp("", "colibri-bench-pins-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(pinDir)
	pinEnv = "COLIBRI_MCP_PIN_FILE=" + filepath.Join(pinDir, "pins.json")
	if err := os.Mkdir(filepath.Join(pinDir, "state"), 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stateEnv = "COLIBRI_MCP_STATE_DIR=" + filepath.Join(pinDir, "state")

	want := map[string]bool{}
	for _, r := range strings.Split(*rows+","+strings.ReplaceAll(*only, "ab", "cold"), ",") {
		if r = strings.TrimSpace(r); r != "" {
			want[r] = true
		}
	}
	runs := func(part string) bool { return len(want) == 0 || want[part] }
	faceList := strings.Split(*faces, ",")

	demoAbs, _ := filepath.Abs(*demo)
	targets := []target{{name: "demo", command: demoAbs, tool: "echo", toolArg: map[string]any{"message": "hi"}, n: 5 * *n, pause: 10 * time.Millisecond}}
	everything, _ := filepath.Abs(filepath.Join(*peers, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
	if _, err := os.Stat(everything); err == nil {
		targets = append(targets, target{name: "everything", command: "node", args: []string{everything, "stdio"},
			tool: "echo", toolArg: map[string]any{"message": "hi"}, n: *n, pause: 450 * time.Millisecond})
	} else {
		fmt.Println("server-everything is not installed (make peers): measuring the demo server only")
	}

	// Both sides run the hosted server with the same small environment:
	// colibri's explicit child environment (docs/registry.md#env-and-name). In
	// particular NODE_EXTRA_CA_CERTS is not set on either side.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}

	host, _ := os.Hostname()
	loadavg, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("colibri-mcp bench: %s, %s/%s, %d CPUs, %s, %s, load average %s\n", host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02 15:04 UTC"), orNA(strings.Join(strings.Fields(string(loadavg))[:min(3, len(strings.Fields(string(loadavg))))], " ")))
	fmt.Printf("hosted servers' environment on both sides: PATH, HOME (NODE_EXTRA_CA_CERTS unset); the same go-sdk client on both sides\n")
	if len(colibriEnv) > 0 {
		fmt.Printf("colibri's own process also has: %s\n", strings.Join(colibriEnv, " "))
	}
	fmt.Println()
	if runs("cold") {
		fmt.Printf("per-request (cold) call-tool through colibri vs a direct client that spawns, initializes and calls (A/B alternated)\n")
		header()
		for _, t := range targets {
			if err := run(*colibri, t, env); err != nil {
				fail(t.name, err)
			}
		}
	}
	if runs("warm") {
		fmt.Printf("\npersistent (warm) call-tool through colibri vs a direct client's warm session (A/B alternated)\n")
		header()
		for _, t := range targets {
			for _, face := range faceList {
				if err := warmAB(*colibri, t, face, env, *warmN); err != nil {
					fail(t.name+" warm "+face, err)
				}
			}
		}
	}
	if runs("only") {
		fmt.Printf("\nserve --only NAME over stdio, the server persistent (warm), vs a direct client's warm session vs the same client through a bare stdio relay process (io.Copy, no framing), A/B/C rotated: tools/call, prompts/get, resources/read\n")
		header()
		for _, t := range targets {
			if err := onlyAB(*colibri, t, env, *warmN); err != nil {
				fail(t.name+" only", err)
			}
		}
	}
	if runs("big") {
		t := targets[len(targets)-1] // server-everything when it is installed
		fmt.Printf("\n%s echo through a persistent server: colibri vs a direct client's warm session (A/B alternated)\n", mib(int64(*bigSize)))
		header()
		for _, face := range faceList {
			if err := bigAB(*colibri, t, face, env, *bigN, *bigSize); err != nil {
				fail(t.name+" big "+face, err)
			}
		}
	}
	if runs("big") || want["strict"] {
		t := targets[len(targets)-1]
		bin := *nostrict
		if bin == "" {
			if bin, err = buildNoStrict(*goBin, pinDir); err != nil {
				fail("strict", err)
			}
		}
		fmt.Printf("\nstrict reading's cost: %s echo through colibri as built vs the same source built with -tags nostrict (strict reading compiled out), each with its own persistent server (A/B alternated)\n", mib(int64(*bigSize)))
		header()
		for _, face := range faceList {
			if err := strictAB(*colibri, bin, t, face, env, *bigN, *bigSize); err != nil {
				fail(t.name+" strict "+face, err)
			}
		}
	}
	if runs("load") {
		if err := load(*colibri, demoAbs, env); err != nil {
			fail("load", err)
		}
	}
	if runs("soak") {
		if err := soak(demoAbs, *soakN); err != nil {
			fail("soak", err)
		}
	}
	if runs("sandbox") {
		if err := sandboxRow(*colibri, demoAbs, env, 5**n); err != nil {
			fail("sandbox", err)
		}
	}
	if runs("egress") {
		if err := egressRows(*colibri, env, 5**n); err != nil {
			fail("egress", err)
		}
	}
	if runs("spare") {
		if err := spareRows(*colibri, targets, env, *short); err != nil {
			fail("spare", err)
		}
	}
	if runs("cost") {
		if err := costRows(*colibri, demoAbs, env, *short); err != nil {
			fail("cost", err)
		}
	}
	if runs("growth") {
		if err := growthRows(*colibri, demoAbs, env, *short); err != nil {
			fail("growth", err)
		}
	}
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(1)
}

// registryFile writes a registry of servers to a temporary file.
func registryFile(servers map[string]any) (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "colibri-bench-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "external-mcp.json")
	b, _ := json.Marshal(map[string]any{"servers": servers})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

func run(colibri string, t target, env []string) error {
	ctx := context.Background()
	cs, cleanup, err := startColibri(colibri, t, "", env)
	if err != nil {
		return err
	}
	defer cleanup()

	viaColibri := colibriCall(ctx, cs, t)
	direct := func() (time.Duration, error) {
		start := time.Now()
		c := exec.Command(t.command, t.args...)
		c.Env = env
		dc := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, noCaps)
		dcs, err := dc.Connect(ctx, &mcp.CommandTransport{Command: c}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			return 0, err
		}
		_, err = dcs.CallTool(ctx, &mcp.CallToolParams{Name: t.tool, Arguments: t.toolArg})
		d := time.Since(start)
		dcs.Close() // not timed: the direct client's teardown happens after its answer too
		return d, err
	}

	a, d, err := alternate(3, t.n, t.pause, viaColibri, direct)
	if err != nil {
		return err
	}
	rowAB(t.name, "stdio", "cold", a, d)
	return nil
}

// header and rowAB print one comparison: colibri's samples a against the
// direct client's d, with n, median, p90 and the ratios of both.
func header() {
	fmt.Printf("%-11s %-6s %-6s %-22s %5s %10s %10s\n", "server", "face", "row", "measure", "n", "median", "p90")
}

func rowAB(server, face, row string, a, d []time.Duration) {
	sampleLine(server, face, row, "colibri", a)
	sampleLine(server, face, row, "direct", d)
	ratioLine(server, face, row, "ratio colibri/direct", a, d)
	fmt.Println()
}

// rowABC is rowAB with a third side, a bare relay's samples r, and its
// ratio to direct beside colibri's: colibri's lines read as rowAB's.
func rowABC(server, face, row string, a, d, r []time.Duration) {
	sampleLine(server, face, row, "colibri", a)
	sampleLine(server, face, row, "direct", d)
	sampleLine(server, face, row, "relay", r)
	ratioLine(server, face, row, "ratio colibri/direct", a, d)
	ratioLine(server, face, row, "ratio relay/direct", r, d)
	fmt.Println()
}

// sampleLine prints one side's n, median and p90.
func sampleLine(server, face, row, measure string, xs []time.Duration) {
	fmt.Printf("%-11s %-6s %-6s %-22s %5d %10s %10s\n", server, face, row, measure, len(xs), dur(quantile(xs, 0.5)), dur(quantile(xs, 0.9)))
}

// ratioLine prints the ratios of x's median and p90 to y's, and what x's
// median adds to y's.
func ratioLine(server, face, row, measure string, x, y []time.Duration) {
	mx, my := quantile(x, 0.5), quantile(y, 0.5)
	px, py := quantile(x, 0.9), quantile(y, 0.9)
	fmt.Printf("%-11s %-6s %-6s %-22s %5s %10.3f %10.3f   (+%s median)\n", server, face, row, measure, "", float64(mx)/float64(my), float64(px)/float64(py), dur(mx-my))
}

func dur(d time.Duration) string {
	if d >= 100*time.Millisecond || d <= -100*time.Millisecond {
		return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.3fms", float64(d.Nanoseconds())/1e6)
}

func quantile(xs []time.Duration, q float64) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// noCaps: the same (empty) client capabilities on both sides of every
// comparison. colibri offers a hosted server exactly what its caller offers,
// and a roots capability would cost server-everything a roots/list round trip.
var noCaps = &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}

// startColibri starts colibri-mcp serving a registry with t's server (with
// the given lifecycle, "" for the default) and connects a client to it over
// stdio.
func startColibri(colibri string, t target, lifecycle string, env []string) (*mcp.ClientSession, func(), error) {
	cs, _, cleanup, err := startFace(colibri, t, lifecycle, "stdio", env)
	return cs, cleanup, err
}

// colibriCall is a timed call-tool of t's tool through colibri.
func colibriCall(ctx context.Context, cs *mcp.ClientSession, t target) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
			Arguments: map[string]any{"server": t.name, "name": t.tool, "arguments": t.toolArg}})
		d := time.Since(start)
		if err == nil && res.IsError {
			b, _ := json.Marshal(res)
			err = fmt.Errorf("colibri: %s", b)
		}
		return d, err
	}
}

// alternate runs each side warm times unmeasured, then n times each,
// alternating which side goes first (A/B, B/A, …), pausing after each
// measurement; it returns the samples of a and of b.
func alternate(warm, n int, pause time.Duration, a, b func() (time.Duration, error)) (as, bs []time.Duration, err error) {
	s, err := alternateN(warm, n, pause, a, b)
	if err != nil {
		return nil, nil, err
	}
	return s[0], s[1], nil
}

// alternateN is alternate over any number of sides: each runs warm times
// unmeasured, then n times, the order rotating by one each round (A/B/C,
// B/C/A, C/A/B, …) so that each side takes each place as often; for two
// sides that is alternate's A/B, B/A. It returns each side's samples, in
// the order of sides.
func alternateN(warm, n int, pause time.Duration, sides ...func() (time.Duration, error)) ([][]time.Duration, error) {
	for range warm {
		for _, measure := range sides {
			if _, err := measure(); err != nil {
				return nil, err
			}
		}
	}
	samples := make([][]time.Duration, len(sides))
	for i := range n {
		for j := range sides {
			k := (i + j) % len(sides)
			x, err := sides[k]()
			if err != nil {
				return nil, err
			}
			samples[k] = append(samples[k], x)
			time.Sleep(pause)
		}
	}
	return samples, nil
}
