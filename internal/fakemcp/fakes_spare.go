package main

//lint:file-ignore SA1019 the fake records the sampling and roots capabilities a caller offered, which colibri relays on purpose.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// spareFakes: Fakes for spare processes (docs/registry.md#spare-processes-ready-before-the-request).
var spareFakes = map[string]func(){
	// A well-behaved server that witnesses when it was first written to:
	// with $FAKEMCP_EARLY set, if its first bytes on stdin arrive while the file $FAKEMCP_MARKER does
	// not exist yet (the test creates it just before its request), it
	// writes them to $FAKEMCP_EARLY/PID. Tools: "pid" (its pid), "caps"
	// (the client capabilities it was initialized with: elicitation, roots,
	// sampling, comma-separated), "var"
	// (its $SPARE_VAR).
	"spare-witness": func() {
		in := &witness{r: os.Stdin}
		s := mcp.NewServer(&mcp.Implementation{Name: "spare-witness", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "pid", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
				return text(strconv.Itoa(os.Getpid())), nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "caps", InputSchema: map[string]any{"type": "object"}},
			func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
				c := req.Session.InitializeParams().Capabilities
				var names []string
				if c.Elicitation != nil {
					names = append(names, "elicitation")
				}
				if c.RootsV2 != nil {
					names = append(names, "roots")
				}
				if c.Sampling != nil {
					names = append(names, "sampling")
				}
				return text(strings.Join(names, ",")), nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "var", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
				return text(os.Getenv("SPARE_VAR")), nil, nil
			})
		s.Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: os.Stdout})
	},
	// A server that gives up, exit status 0, when no client writes to it
	// within $IMPATIENT_MS (servers with an idle watchdog do), and else
	// serves: tool "pid".
	"spare-impatient": func() {
		ms, _ := strconv.Atoi(os.Getenv("IMPATIENT_MS"))
		first := make(chan []byte, 1)
		go func() {
			b := make([]byte, 4096)
			n, _ := os.Stdin.Read(b)
			first <- b[:n]
		}()
		var got []byte
		select {
		case got = <-first:
		case <-time.After(time.Duration(ms) * time.Millisecond):
			fmt.Fprintln(os.Stderr, "spare-impatient: no client; bye")
			os.Exit(0)
		}
		s := mcp.NewServer(&mcp.Implementation{Name: "spare-impatient", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "pid", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
				return text(strconv.Itoa(os.Getpid())), nil, nil
			})
		s.Run(context.Background(), &mcp.IOTransport{Reader: io.NopCloser(io.MultiReader(bytes.NewReader(got), os.Stdin)), Writer: os.Stdout})
	},
	// Says why on stderr and exits with status 1 at once, before reading
	// anything: a server that cannot start (a missing key).
	"spare-dies": func() {
		fmt.Fprintln(os.Stderr, "spare-dies: SPARE_API_KEY is not set; giving up")
		os.Exit(1)
	},
}

// witness is stdin, checking its first bytes against the marker.
type witness struct {
	r    io.ReadCloser
	once sync.Once
}

func (w *witness) Read(b []byte) (int, error) {
	n, err := w.r.Read(b)
	if n > 0 && os.Getenv("FAKEMCP_EARLY") != "" {
		w.once.Do(func() {
			if _, err := os.Stat(os.Getenv("FAKEMCP_MARKER")); err != nil {
				path := filepath.Join(os.Getenv("FAKEMCP_EARLY"), strconv.Itoa(os.Getpid()))
				if werr := os.WriteFile(path, b[:n], 0o644); werr != nil {
					fatal(werr)
				}
			}
		})
	}
	return n, err
}

func (w *witness) Close() error { return w.r.Close() }
