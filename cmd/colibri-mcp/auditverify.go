package main

import (
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/audit"
	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
)

const auditDescription = "The audit log is a hash chain: each line's prev is the SHA-256 (with --audit-key-file,\n" +
	"the HMAC) of the line before it of the same colibri process, so that a line changed,\n" +
	"removed, inserted or moved breaks it (docs/operations.md).\n\n" +
	"Examples:\n" +
	"  colibri-mcp audit verify /var/log/colibri_mcp_audit.log\n" +
	"  colibri-mcp audit verify --audit-key-file /usr/local/etc/colibri/audit.key \\\n" +
	"      /var/log/colibri_mcp_audit.log.1.bz2 /var/log/colibri_mcp_audit.log.0.bz2 /var/log/colibri_mcp_audit.log"

func auditCommand(stdin io.Reader, stdout, stderr io.Writer) *cli.Command {
	return &cli.Command{
		Name:        "audit",
		Usage:       "check the audit log: verify its hash chain",
		ArgsUsage:   "verify FILE…",
		Description: auditDescription + exitCodesHelp,
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.NArg() > 0 {
				return clihelp.UnknownCommand(cmd, cmd.Args().First())
			}
			return usage(fmt.Errorf("audit: say what to do: verify FILE… (%s)", clihelp.HelpHint(cmd)))
		},
		Commands: []*cli.Command{{
			Name:      "verify",
			Usage:     "check the hash chain of audit log files, in the order written (rotated ones first); - is stdin",
			ArgsUsage: "FILE…",
			Description: "Exit 0 and the count of lines when every chain is whole; exit 1 naming the file and the\n" +
				"two lines between which a chain first breaks. Files compressed by newsyslog (.gz, .bz2,\n" +
				".xz, .zst) are read as they are; lines that are not audit lines are skipped and counted.\n\n" +
				"Examples:\n" +
				"  colibri-mcp audit verify /var/log/colibri_mcp_audit.log\n" +
				"  zcat audit.log.0.gz | colibri-mcp audit verify -" + exitCodesHelp,
			Action: func(ctx context.Context, cmd *cli.Command) error {
				if err := clihelp.WantArgs(cmd, 1, 1<<16); err != nil {
					return err
				}
				return cmdAuditVerify(cmd.String("audit-key-file"), cmd.Args().Slice(), stdin, stdout)
			},
		}},
	}
}

func cmdAuditVerify(keyFile string, files []string, stdin io.Reader, stdout io.Writer) error {
	var key []byte
	if keyFile != "" {
		var err error
		if key, _, err = audit.LoadKey(keyFile); err != nil {
			return usage(err)
		}
	}
	var sources []audit.Source
	for _, name := range files {
		r, closeIt, err := openAuditFile(name, stdin)
		if err != nil {
			return failed(err)
		}
		defer closeIt()
		sources = append(sources, audit.Source{Name: name, R: r})
	}
	rep, err := audit.Verify(sources, key)
	if errors.Is(err, audit.ErrNeedKey) {
		return usage(fmt.Errorf("audit verify: %w", err))
	}
	if err != nil {
		return failed(fmt.Errorf("audit verify: %w", err))
	}
	fmt.Fprintf(stdout, "%d audit lines, chain whole (%d %s)\n", rep.Lines, rep.Chains, plural(rep.Chains, "chain", "chains"))
	for _, h := range rep.Heads {
		fmt.Fprintf(stdout, "chain %s: %d %s, last %s (compare with the last \"audit chain head\" logged)\n", h.Chain, h.Lines, plural(int(h.Lines), "line", "lines"), h.Last)
	}
	for _, m := range rep.MidChain {
		fmt.Fprintf(stdout, "starts mid-chain at %s: its beginning was rotated away, or is in a file not given\n", m)
	}
	for _, m := range rep.Torn {
		fmt.Fprintf(stdout, "a torn write at %s: a line colibri began and did not finish (killed mid-write, a full disk), in no chain\n", m)
	}
	if rep.Unchained > 0 {
		fmt.Fprintf(stdout, "%d unchained %s before the chain (written by a colibri without it), not verified\n", rep.Unchained, plural(rep.Unchained, "line", "lines"))
	}
	if rep.Skipped > 0 {
		fmt.Fprintf(stdout, "%d %s that are not audit lines skipped\n", rep.Skipped, plural(rep.Skipped, "line", "lines"))
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// openAuditFile opens one file for verify: - is stdin; .gz and .bz2 are
// read with Go's own decompressors, .xz and .zst through xz(1) and zstd(1)
// (FreeBSD's base has both), whose failure is an error at the end.
func openAuditFile(name string, stdin io.Reader) (io.Reader, func(), error) {
	if name == "-" {
		return stdin, func() {}, nil
	}
	var tool string
	switch {
	case strings.HasSuffix(name, ".xz"):
		tool = "xz"
	case strings.HasSuffix(name, ".zst"):
		tool = "zstd"
	}
	if tool != "" {
		if _, err := os.Stat(name); err != nil {
			return nil, nil, err
		}
		path, err := exec.LookPath(tool)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: needs %s(1), which is not on PATH: install it, or decompress the file and pass it, or - (stdin)", name, tool)
		}
		cmd := exec.Command(path, "-dc", "--", name)
		var errb strings.Builder
		cmd.Stderr = &errb
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", name, err)
		}
		r := &toolReader{r: out, cmd: cmd, name: name, stderr: &errb}
		return r, func() { cmd.Process.Kill(); cmd.Wait() }, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case strings.HasSuffix(name, ".gz"):
		z, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("reading %s: %w", name, err)
		}
		return z, func() { f.Close() }, nil
	case strings.HasSuffix(name, ".bz2"):
		return bzip2.NewReader(f), func() { f.Close() }, nil
	}
	return f, func() { f.Close() }, nil
}

// toolReader reads a decompressor's output and, at its end, reports the
// decompressor's failure as the read's error.
type toolReader struct {
	r      io.Reader
	cmd    *exec.Cmd
	name   string
	stderr *strings.Builder
}

func (t *toolReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err == io.EOF {
		if werr := t.cmd.Wait(); werr != nil {
			return n, fmt.Errorf("%s -dc %s: %v: %s", t.cmd.Path, t.name, werr, strings.TrimSpace(t.stderr.String()))
		}
	}
	return n, err
}
