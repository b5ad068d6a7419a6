package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/colibri-mcp/colibri-mcp/internal/testwait"
)

// ownerEnv, set to a host:port, makes the test binary a bench that starts
// a bare relay to it (startRelay), prints the relay's address, and waits
// to be killed.
const ownerEnv = "COLIBRI_BENCH_TEST_RELAY_OWNER"

func TestMain(m *testing.M) {
	if target := os.Getenv(relayEnv); target != "" {
		serveRelay(target, os.Stdin, os.Stdout)
		os.Exit(0)
	}
	if target := os.Getenv(ownerEnv); target != "" {
		addr, _, err := startRelay(os.Args[0], target)
		if err != nil {
			fail("owner", err)
		}
		fmt.Println(addr)
		select {}
	}
	os.Exit(m.Run())
}

// A bench that dies (Ctrl-C, a kill: no deferred stop runs) leaves no
// relay behind: the relay ends with its stdin, the bench's pipe.
func TestRelayEndsWithItsBench(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }() // an echo
		}
	}()
	owner := exec.Command(os.Args[0], "-test.run=^$")
	owner.Env = append(os.Environ(), ownerEnv+"="+target.Addr().String())
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { owner.Process.Kill(); owner.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the owner's relay: %q, %v", line, err)
	}
	addr := strings.TrimSpace(line)
	// The control: the relay carries bytes to the target and back.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := bufio.NewReader(c).ReadString('\n'); err != nil || got != "x\n" {
		t.Fatalf("through the relay: %q, %v", got, err)
	}
	c.Close()
	owner.Process.Kill()
	owner.Wait()
	testwait.Eventually(t, "the relay to end with the bench that started it", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
}
