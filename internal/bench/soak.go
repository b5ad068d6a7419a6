package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/internal/proctable"

	"github.com/colibri-mcp/colibri-mcp/host"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// soak makes n sequential call-tool requests to the demo server through
// colibri's own packages, in this process (over in-memory transports), so
// that goroutines, fds and RSS can be sampled; then it checks that no hosted
// process is left.
func soak(demo string, n int) error {
	reg, cleanup, err := registryFile(map[string]any{"demo": map[string]any{"command": demo}})
	if err != nil {
		return err
	}
	defer cleanup()
	loader := &registry.Loader{Path: reg}
	h := host.New(host.Options{Environ: func() []string { return []string{"PATH=" + os.Getenv("PATH")} }})
	svc := tools.New(tools.Options{Registry: loader.Load, ConfigPath: reg, Host: h, ExternalCall: true})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ss, err := svc.NewServer("bench").Connect(ctx, st, nil)
	if err != nil {
		return err
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return err
	}

	fmt.Printf("\nsoak: %d sequential call-tool requests to the demo server (colibri in-process)\n", n)
	fmt.Printf("%7s %11s %5s %10s %8s\n", "calls", "goroutines", "fds", "RSS", "elapsed")
	pid := os.Getpid()
	sample := func(i int, start time.Time) {
		runtime.GC()
		fmt.Printf("%7d %11d %5d %10s %8s\n", i, runtime.NumGoroutine(), proctable.FDs(pid), mib(proctable.Memory(pid, "VmRSS")), time.Since(start).Round(time.Second))
	}
	start := time.Now()
	for i := 1; i <= n; i++ {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "colibri_external_mcp_call_tool",
			Arguments: map[string]any{"server": "demo", "name": "echo", "arguments": map[string]any{"message": strconv.Itoa(i)}}})
		if err != nil || res.IsError {
			return fmt.Errorf("call %d: %v %v", i, err, res)
		}
		if i == 1 || i%(n/10) == 0 {
			if i == 1 {
				time.Sleep(100 * time.Millisecond) // let the first teardown finish
			}
			sample(i, start)
		}
	}
	cs.Close()
	ss.Close()
	svc.Close()
	h.Close()
	left := len(proctable.Children(pid))
	fmt.Printf("hosted processes left after the soak: %d\n", left)
	if left != 0 {
		return fmt.Errorf("%d hosted processes survived the soak", left)
	}
	return nil
}
