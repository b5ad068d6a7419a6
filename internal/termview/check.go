package termview

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/colibri-mcp/colibri-mcp/tools"
)

// CheckRead is check's first line: the registry read, and its size.
func CheckRead(w io.Writer, path string, servers int) {
	fmt.Fprintf(w, "registry %s: valid, %s\n", path, Plural(servers, "server"))
}

// CheckLine is one server's line of check, with the server's stderr tail
// under a failure: the reason is usually there ("no API key").
func CheckLine(w io.Writer, r tools.CheckServer) {
	switch {
	case r.Error != nil:
		fmt.Fprintf(w, "  %-20s FAIL %s: %s\n", r.Server, r.Error.Kind, r.Error.Message)
		if r.Error.StderrTail != "" {
			fmt.Fprintln(w, TailBlock(r.Error.StderrTail))
		}
	case r.Tools != nil && len(r.Changed) > 0:
		status := "CHANGED"
		if r.OK {
			status = "ok, changed"
		}
		var names []string
		for _, c := range r.Changed {
			names = append(names, fmt.Sprintf("%s (%s)", c.Name, strings.Join(c.What, ", ")))
		}
		fmt.Fprintf(w, "  %-20s %s (%s; differ from their pins: %s; see colibri-mcp pins diff %s)\n", r.Server, status, Plural(*r.Tools, "tool"), strings.Join(names, ", "), r.Server)
	case r.Tools != nil && r.Spare > 0:
		fmt.Fprintf(w, "  %-20s ok (%s; %s kept ready by serve)\n", r.Server, Plural(*r.Tools, "tool"), Plural(r.Spare, "spare"))
	case r.Tools != nil:
		fmt.Fprintf(w, "  %-20s ok (%s)\n", r.Server, Plural(*r.Tools, "tool"))
	case r.Spare > 0:
		fmt.Fprintf(w, "  %-20s ok (%s kept ready by serve)\n", r.Server, Plural(r.Spare, "spare"))
	default:
		fmt.Fprintf(w, "  %-20s ok\n", r.Server)
	}
	if r.ToolsWith != nil {
		fmt.Fprintf(w, "  %-20s %s listed to a caller offering %s, pinned for it\n", "", Plural(*r.ToolsWith, "tool"), r.Capabilities)
	}
	for _, f := range r.Flagged {
		var kinds []string
		for _, one := range f.Flags {
			kinds = append(kinds, one.Flag+" in "+one.Where)
		}
		fmt.Fprintf(w, "  %-20s flagged by the pin scan: %s (%s; see colibri-mcp pins diff %s)\n", "", f.Name, strings.Join(kinds, ", "), r.Server)
	}
	fmt.Fprintf(w, "  %-20s %s\n", "", r.Confinement)
	if len(r.RunTime) > 0 {
		fmt.Fprintf(w, "  %-20s ${%s}: set where the image runs, not checked here\n", "", strings.Join(r.RunTime, "}, ${"))
	}
}

// CheckImageFiles is check --root's line of the service's files in the
// image: which env file, state folder and pin file it will use.
func CheckImageFiles(w io.Writer, out *tools.CheckResult) {
	env := "no env file"
	if out.EnvFile != "" {
		env = "env file " + out.EnvFile
	}
	fmt.Fprintf(w, "in the image: %s, state folder %s, pin file %s\n", env, out.StateDir, out.PinFile)
}

// CheckEnd is check's last line: the registry's problem, or the count of
// servers that passed and failed, and the time it took.
func CheckEnd(w io.Writer, out *tools.CheckResult, path string, took time.Duration) {
	if out.Error != nil {
		// The registry's own message names the file already: once is
		// enough.
		msg := out.Error.Message
		if !strings.HasPrefix(msg, path+":") {
			msg = path + ": " + msg
		}
		fmt.Fprintf(w, "registry %s\n", msg)
		return
	}
	for _, warning := range out.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	failures := out.Failed()
	fmt.Fprintf(w, "%d ok, %d failed in %.1fs\n", len(out.Servers)-failures, failures, took.Seconds())
}

// Plural is "1 server", "2 servers".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Failure is a colibri failure on a line of w (its kind and message), with
// the hosted server's stderr tail under it when there is one.
func Failure(w io.Writer, d *tools.ErrorDetail) {
	fmt.Fprintf(w, "colibri-mcp: %s: %s\n", d.Kind, d.Message)
	if d.StderrTail != "" {
		fmt.Fprintf(w, "last lines of the server's stderr:\n  %s\n", strings.ReplaceAll(d.StderrTail, "\n", "\n  "))
	}
}

// JSON writes v indented, with <, > and & as they are (the command line's
// --json output).
func JSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
