package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sandboxFakes: Fakes that try to break out of the Linux sandbox (docs/security.md#on-linux-a-sandboxed-server-keeps-to-what-its-entry-grants).
var sandboxFakes = map[string]func(){
	// prisoner tries, on request, what a sandbox forbids; its tool "try"
	// answers "ok: …" when the attempt worked and "denied: ERR" when the
	// kernel refused it, so that one test sees both with and without the
	// sandbox. Ops: read, write (path), tcp, mptcp, sctp, udp (addr), signal (pid,
	// signal number sig), ptrace (pid), exec (path: a setuid copy of this
	// fake, run as "euid"), alloc (mb, touched), spin (forever), env, fetch
	// (addr: a URL, through HTTPS_PROXY or the proxy URL path), get (addr: a URL, by net/http's
	// own reading of the proxy variables), run (argv: a program of another
	// runtime, its output).
	"prisoner": func() {
		s := mcp.NewServer(&mcp.Implementation{Name: "prisoner", Version: "1"}, nil)
		type in struct {
			Op   string `json:"op"`
			Path string `json:"path,omitempty"`
			Addr string `json:"addr,omitempty"`
			PID  int    `json:"pid,omitempty"`
			Sig  int    `json:"sig,omitempty"`
			MB   int    `json:"mb,omitempty"`
			// Argv is the program op "run" runs, with the server's
			// environment, for at most 20 s.
			Argv []string `json:"argv,omitempty"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "try"}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			if a.Op == "run" {
				if len(a.Argv) == 0 {
					return text("denied: no argv"), nil, nil
				}
				ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				out, err := exec.CommandContext(ctx, a.Argv[0], a.Argv[1:]...).CombinedOutput()
				if err != nil {
					return text("denied: " + err.Error() + ": " + strings.TrimSpace(string(out))), nil, nil
				}
				return text("ok: " + strings.TrimSpace(string(out))), nil, nil
			}
			out, err := try(a.Op, a.Path, a.Addr, a.PID, a.Sig, a.MB)
			if err != nil {
				return text("denied: " + err.Error()), nil, nil
			}
			return text("ok: " + out), nil, nil
		})
		s.Run(context.Background(), &mcp.StdioTransport{})
	},
	// euid prints the effective uid: a setuid copy run by prisoner shows
	// whether exec gained the file owner's privilege.
	"euid": func() { fmt.Println(os.Geteuid()) },
}

// errNoOp is tryMore's answer to an op it does not know.
var errNoOp = errors.New("no such op")

func try(op, path, addr string, pid, sig, mb int) (string, error) {
	switch op {
	case "read":
		b, err := os.ReadFile(path)
		return fmt.Sprintf("%d bytes", len(b)), err
	case "write":
		return "written", os.WriteFile(path, []byte("prisoner was here\n"), 0o644)
	case "tcp":
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return "", err
		}
		c.Close()
		return "connected", nil
	case "mptcp", "sctp":
		return inetSocket(op, addr)
	case "udp":
		c, err := net.Dial("udp", addr)
		if err != nil {
			return "", err
		}
		defer c.Close()
		_, err = c.Write([]byte("prisoner"))
		return "sent", err
	case "signal":
		return "signalled", syscall.Kill(pid, syscall.Signal(sig))
	case "ptrace":
		if err := ptraceAttach(pid); err != nil {
			return "", err
		}
		return "attached", nil
	case "exec":
		out, err := exec.Command(path, "euid").Output()
		return string(out), err
	case "alloc":
		var keep [][]byte
		for i := 0; i < mb; i++ {
			b := make([]byte, 1<<20)
			for j := range b {
				b[j] = byte(j)
			}
			keep = append(keep, b)
		}
		return strconv.Itoa(len(keep)) + " MiB", nil
	case "spin":
		for n := 0; ; n++ {
			_ = n * n
		}
	case "fetch": // addr: a URL, fetched through the proxy HTTPS_PROXY names (which Go skips for loopback itself), or path's
		proxy := os.Getenv("HTTPS_PROXY")
		if path != "" {
			proxy = path
		}
		u, err := url.Parse(proxy)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("no HTTPS_PROXY: %q", os.Getenv("HTTPS_PROXY"))
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u),
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := c.Get(addr)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b))), nil
	case "get": // addr: a URL, through the proxy net/http's ProxyFromEnvironment finds (none for localhost or a loopback address)
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		c := &http.Client{Timeout: 5 * time.Second, Transport: tr}
		resp, err := c.Get(addr)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b))), nil
	case "env":
		return fmt.Sprintf("HOME=%s TMPDIR=%s", os.Getenv("HOME"), os.Getenv("TMPDIR")), nil
	}
	if out, err := tryMore(op, path, addr, pid, mb); err != errNoOp {
		return out, err
	}
	return "", fmt.Errorf("no op %q", op)
}
