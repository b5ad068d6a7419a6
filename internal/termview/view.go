package termview

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/colibri-mcp/colibri-mcp/tools"
)

// Servers is the servers command's table: the registry, the call gate, and
// a row a server (a remote one shows its url, transport and auth where a
// command is, its header names where environment names are).
func Servers(w io.Writer, out *tools.ServersResult) error {
	fmt.Fprintf(w, "registry: %s\ncalling hosted tools: %s\n\n", out.ConfigPath, onOff(out.ExternalCall))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	// A remote server shows its url, transport and auth kind where a
	// command is, and its header names where environment names are.
	fmt.Fprintln(tw, "SERVER\tCOMMAND or URL\tENV or HEADERS\tJAIL or SANDBOX\tDESCRIPTION")
	for _, srv := range out.Servers {
		cmdline := strings.Join(append([]string{srv.Command}, srv.Args...), " ")
		names := srv.EnvKeys
		if srv.URL != "" {
			cmdline = fmt.Sprintf("%s (%s, auth %s)", srv.URL, srv.Transport, srv.Auth)
			names = srv.HeaderKeys
		}
		j := "-"
		if srv.Jail != nil {
			j = srv.Jail.Name + srv.Jail.Path
		} else if srv.Sandbox != nil {
			j = "sandboxed" // check shows what it grants
		}
		desc := srv.Description
		if srv.Source != nil {
			// The release the entry runs, beside what it is: an upgrade is
			// a new version here, never a silent change of its tools.
			desc = strings.TrimSpace(desc + " [" + srv.Source.Name + "@" + srv.Source.Version + "]")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", srv.Name, cmdline, orDash(strings.Join(names, ",")), j, desc)
	}
	return tw.Flush()
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled (--external-call or COLIBRI_MCP_EXTERNAL_CALL=1 enables it)"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ServerTools is one server's block of list-tools: its tools, or its
// error with the last lines of its stderr (usually the reason: "no API
// key"), as check --probe shows them.
func ServerTools(w io.Writer, st tools.ServerTools) {
	if st.Error != nil {
		fmt.Fprintf(w, "%s: error: %s: %s\n", st.Server, st.Error.Kind, st.Error.Message)
		if st.Error.StderrTail != "" {
			fmt.Fprintln(w, TailBlock(st.Error.StderrTail))
		}
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "%s: %s\n", st.Server, Plural(len(st.Tools), "tool"))
	for _, t := range st.Tools {
		fmt.Fprintf(w, "  %-32s %s\n", t.Name, FirstLine(t.Description))
	}
	for _, bad := range st.Invalid {
		fmt.Fprintf(w, "  not offered: %s: %s\n", bad.Name, bad.Reason)
	}
	for _, c := range st.Changed {
		fmt.Fprintf(w, "  ! %-30s changed since pinned: %s (colibri-mcp pins diff %s)\n", c.Name, strings.Join(c.What, ", "), st.Server)
	}
	fmt.Fprintln(w)
}

// EachServer shows each server's tools (ServerTools) as soon as list has
// them, lists running at once: the slowest (one that hangs until its
// timeout) holds back no other, and a failure shows its stderr tail where
// it is. It returns how many failed.
func EachServer(w io.Writer, names []string, list func(name string) tools.ServerTools) (failures int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() {
			st := list(name)
			mu.Lock()
			defer mu.Unlock()
			if st.Error != nil {
				failures++
			}
			ServerTools(w, st)
		})
	}
	wg.Wait()
	return failures
}

// TailBlock is a server's stderr tail, indented under the line it explains.
func TailBlock(tail string) string {
	return "      | " + strings.ReplaceAll(strings.TrimRight(tail, "\n"), "\n", "\n      | ")
}

// FirstLine is the first line of s.
func FirstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// NewProgress is a call's progress shown on one line of w (a terminal),
// rewritten in place.
func NewProgress(w io.Writer) *Progress { return &Progress{w: w} }

type Progress struct {
	mu     sync.Mutex
	w      io.Writer
	shown  bool
	closed bool // done: a late notification draws nothing
}

func (p *Progress) Show(_ context.Context, n *mcp.ProgressNotificationParams) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	line := fmt.Sprintf("progress: %g", n.Progress)
	if n.Total > 0 {
		line += fmt.Sprintf("/%g", n.Total)
	}
	if n.Message != "" {
		line += " " + n.Message
	}
	fmt.Fprintf(p.w, "\r\033[K%s", SafeText(line)) // colibri's escapes only
	p.shown = true
}

// Done clears the progress line, so that what follows starts clean.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown && !p.closed {
		fmt.Fprint(p.w, "\r\033[K")
	}
	p.closed = true
}

// Result shows a hosted result as a person reads it: text as it is,
// other content summarized.
func Result(w io.Writer, res *mcp.CallToolResult) {
	if res.IsError {
		fmt.Fprintln(w, "the tool reported an error:")
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			fmt.Fprintln(w, c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(w, "[image %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(w, "[audio %s, %d bytes]\n", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(w, "[resource link %s]\n", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				fmt.Fprintf(w, "[resource %s]\n", c.Resource.URI)
			}
		}
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if !textHolds(res.Content, b) {
			fmt.Fprintf(w, "structured: %s\n", b)
		}
	}
}

// textHolds reports whether a text content of content is the JSON b (as
// the spec asks a tool that returns structuredContent to send it as text
// too): the structured line would say it twice.
func textHolds(content []mcp.Content, b []byte) bool {
	for _, c := range content {
		t, ok := c.(*mcp.TextContent)
		if !ok {
			continue
		}
		var v any
		if json.Unmarshal([]byte(t.Text), &v) != nil {
			continue
		}
		if tb, err := json.Marshal(v); err == nil && bytes.Equal(tb, b) {
			return true
		}
	}
	return false
}
