package early

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

// The forwarder's pump carries every byte, in order, from a TCP
// connection (the server's, in its namespace) to a Unix one (to the
// proxy) and back, and passes each side's end on (shutdown): with
// splice(2), and with the buffer it falls back to.
func TestPumpCarriesBothWays(t *testing.T) {
	spliced := func(from, to int) {
		var p [2]int
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			t.Error(err)
			return
		}
		defer syscall.Close(p[0])
		defer syscall.Close(p[1])
		if carried, ok := splicePump(from, to, p); !carried || !ok {
			t.Errorf("splice: carried %v, ok %v; want both (else pump copies, and this is the copy case again)", carried, ok)
		}
	}
	for name, carry := range map[string]func(from, to int){"pump": pump, "splice": spliced, "copy": copyPump} {
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			accepted, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			tcpFile, _ := accepted.(*net.TCPConn).File()
			accepted.Close()
			defer tcpFile.Close()
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			proxySide := os.NewFile(uintptr(fds[1]), "proxy")
			defer proxySide.Close()
			defer syscall.Close(fds[0])
			tcpFd := int(tcpFile.Fd())
			up, down := make(chan struct{}), make(chan struct{})
			go func() { carry(tcpFd, fds[0]); close(up) }()
			go func() { carry(fds[0], tcpFd); close(down) }()

			request := make([]byte, 10<<20)
			rand.Read(request)
			go func() { client.Write(request); client.(*net.TCPConn).CloseWrite() }()
			got, err := io.ReadAll(proxySide) // to the end: the pump's shutdown(SHUT_WR)
			if err != nil || !bytes.Equal(got, request) {
				t.Fatalf("the proxy side read %d bytes (%v), want the %d sent, in order", len(got), err, len(request))
			}
			<-up
			answer := []byte("HTTP/1.1 200 Connection established\r\n\r\nreached")
			proxySide.Write(answer)
			syscall.Shutdown(fds[1], syscall.SHUT_WR)
			back, err := io.ReadAll(client)
			if err != nil || !bytes.Equal(back, answer) {
				t.Fatalf("the server read %q (%v), want %q", back, err, answer)
			}
			<-down
		})
	}
}
