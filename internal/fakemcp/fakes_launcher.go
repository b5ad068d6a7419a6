package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// launcherFakes: a launcher whose real server is a child that inherits its
// stdio, as npx, uv run and wrapper scripts start theirs.
var launcherFakes = map[string]func(){
	// Starts "launched" on its own stdio (in a session of its own when
	// $FAKEMCP_SETSID is set). Once the child is in
	// its "stall" call ($FAKEMCP_STALLED exists) and the next request
	// waits in the pipe, unread, the launcher removes that file and exits
	// with status 3.
	"launcher": func() {
		self, err := os.Executable()
		if err != nil {
			fatal(err)
		}
		cmd := exec.Command(self, "launched")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if os.Getenv("FAKEMCP_SETSID") != "" {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := cmd.Start(); err != nil {
			fatal(fmt.Errorf("starting launched: %w", err))
		}
		stalled := os.Getenv("FAKEMCP_STALLED")
		waitForFile(stalled)
		for {
			if n, err := unix.IoctlGetInt(0, fionread); err == nil && n > 0 {
				// Once: the launcher started next serves on.
				if err := os.Remove(stalled); err != nil {
					fatal(err)
				}
				os.Exit(3)
			}
			time.Sleep(time.Millisecond)
		}
	},
	// Serves its requests one after another until its stdin ends. Its tool
	// "stall" creates $FAKEMCP_STALLED and returns once its launcher has
	// gone and $FAKEMCP_AFTER_MS more have passed (never, if that is
	// "never"); "effect" appends a line to $FAKEMCP_EFFECTS.
	"launched": func() {
		launcher := os.Getppid()
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
				continue
			}
			switch m.Method {
			case "initialize":
				rawReply(m.ID, rawInit)
			case "tools/list":
				rawReply(m.ID, `{"tools":[{"name":"stall","inputSchema":{"type":"object"}},{"name":"effect","inputSchema":{"type":"object"}}]}`)
			case "server/discover":
				rawMethodNotFound(m.ID)
			case "tools/call":
				switch m.Params.Name {
				case "stall":
					stallPastLauncher(launcher)
				case "effect":
					appendLine(os.Getenv("FAKEMCP_EFFECTS"), strconv.Itoa(os.Getpid()))
				}
				rawReply(m.ID, `{"content":[{"type":"text","text":"done"}]}`)
			default:
				rawReply(m.ID, `{}`)
			}
		}
	},
}

// stallPastLauncher blocks until the process launcher is no longer this
// one's parent, then $FAKEMCP_AFTER_MS more.
func stallPastLauncher(launcher int) {
	if err := os.WriteFile(os.Getenv("FAKEMCP_STALLED"), nil, 0o644); err != nil {
		fatal(err)
	}
	for os.Getppid() == launcher {
		time.Sleep(time.Millisecond)
	}
	after := os.Getenv("FAKEMCP_AFTER_MS")
	if after == "never" {
		select {}
	}
	ms, _ := strconv.Atoi(after)
	time.Sleep(time.Duration(ms) * time.Millisecond)
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		fatal(err)
	}
}
