package main

// --root DIR: init, add, remove, servers and check on an image being built
// (docs/freebsd.md, "Building an appliance image"): the registry and
// everything it names are read as if DIR were /, through rootfs.go,
// so that nothing outside DIR is read or written, and the image's commands
// are looked for in the image, never on the build host.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/colibri-mcp/colibri-mcp/internal/clihelp"
	"github.com/colibri-mcp/colibri-mcp/internal/envfile"
	"github.com/colibri-mcp/colibri-mcp/internal/failure"
	"github.com/colibri-mcp/colibri-mcp/internal/pin"
	"github.com/colibri-mcp/colibri-mcp/internal/safefile"
	"github.com/colibri-mcp/colibri-mcp/internal/statedir"
	"github.com/colibri-mcp/colibri-mcp/internal/termview"
	"github.com/colibri-mcp/colibri-mcp/registry"
	"github.com/colibri-mcp/colibri-mcp/tools"
)

// imageDemo is the demo server's place in an image (make install's).
const imageDemo = "/usr/local/libexec/colibri-mcp/demo-mcp-server"

// imagePath is the service's PATH (rc.d/colibri_mcp's prestart): where a
// bare command of the image's registry is looked for.
const imagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// rootFlags are --root and --target-os, for the commands that take them.
func rootFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "root", Usage: "read the registry and everything it names as if `DIR` were / (an image being built); no variable"},
		&cli.StringFlag{Name: "target-os", Usage: "with --root: judge the entries for `OS` freebsd or linux", Value: "freebsd"},
	}
}

// image is --root's: the folder and the system it is for.
type image struct {
	root     string // absolute and clean
	targetOS string
	registry string // the registry's path in the image
	// The service's settings in the image, as paths of the image:
	// --env-file (else the rc.d script's provider.env, when the image has
	// one), --state-dir (else the env file's COLIBRI_MCP_STATE_DIR, else
	// the rc.d script's default) and --pin-file (else the env file's
	// COLIBRI_MCP_PIN_FILE, else STATE_DIR/pins.json).
	envFile, stateDir, pinFile string
	stateErr                   error // what keeps the service from using stateDir, judged here
}

// imageEnvFile is the env file the rc.d script has rc.subr read when it
// is there (colibri_mcp_env_file's default).
const imageEnvFile = "/usr/local/etc/colibri/provider.env"

// host is the build host's path of the image's path p (links followed
// inside the image).
func (im *image) host(p string) (string, error) { return resolveInImage(im.root, p) }

// shown is the image's path of a host path under the root.
func (im *image) shown(host string) string {
	if rel, err := filepath.Rel(im.root, host); err == nil && !strings.HasPrefix(rel, "..") {
		return "/" + rel
	}
	return host
}

// hasFlag says whether cmd defines the flag name.
func hasFlag(cmd *cli.Command, name string) bool {
	return slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), name) })
}

// applyRoot points s at the image when --root is given: the registry is
// the image's (--external-config as a path of the image, else the system
// registry), read and written under DIR.
func applyRoot(cmd *cli.Command, s *settings) error {
	if !hasFlag(cmd, "root") || cmd.String("root") == "" {
		return nil
	}
	dir := cmd.String("root")
	bad := func(format string, a ...any) error {
		return usage(fmt.Errorf(cmd.Name+": "+format+" (%s)", append(a, clihelp.HelpHint(cmd))...))
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return bad("--root %s: %v", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return bad("--root %s: not a folder: make the image's folder first (make install DESTDIR=%s)", dir, dir)
	}
	im := &image{root: filepath.Clean(abs), targetOS: cmd.String("target-os"), registry: registry.DefaultPath}
	if im.targetOS != "freebsd" && im.targetOS != "linux" {
		return bad("--target-os %q: want freebsd or linux", im.targetOS)
	}
	if s.configNamed {
		if !filepath.IsAbs(s.configPath) {
			return bad("--external-config %s: with --root it is a path of the image, and must be absolute", s.configPath)
		}
		im.registry = filepath.Clean(s.configPath)
	}
	if s.configPath, err = im.host(im.registry); err != nil {
		return bad("--root %s: the registry %s: %v", dir, im.registry, err)
	}
	if err := im.settings(cmd, s); err != nil {
		return bad("--root %s: %v", dir, err)
	}
	s.configNamed, s.configTried, s.image = true, nil, im
	return nil
}

// settings finds the service's env file, state folder and pin file in the
// image and points s at them (host paths under the root): nothing of the
// build host's own (its /var/db/colibri, its HOME) is looked at. A flag,
// or its variable, names a path of the image.
func (im *image) settings(cmd *cli.Command, s *settings) error {
	vars := map[string]string{}
	im.envFile = cmd.Root().String("env-file")
	host := ""
	switch {
	case im.envFile != "" && !filepath.IsAbs(im.envFile):
		return fmt.Errorf("--env-file %s: with --root it is a path of the image, and must be absolute", im.envFile)
	case im.envFile != "":
		// colibri opens its --env-file itself, refusing a link.
		var err error
		if host, err = im.hostOf(im.envFile); err != nil {
			return fmt.Errorf("--env-file %s: %v", im.envFile, err)
		}
	default:
		// rc.subr sources provider.env, links and all, when it is there.
		if h, fi, err := statInImage(im.root, imageEnvFile); err == nil && !fi.IsDir() {
			im.envFile, host = imageEnvFile, h
		}
	}
	if host != "" {
		lines, err := envfile.Load(host)
		if errors.Is(err, envfile.ErrReadable) && im.envFile == imageEnvFile && cmd.Name != "check" {
			// rc.subr reads provider.env whatever its mode: only check
			// reports it (below), rather than every edit of the image stop.
			var data []byte
			if data, _, err = safefile.ReadWithMode(host, envfile.MaxSize); err == nil {
				lines, err = envfile.Parse(data)
			}
		}
		if err != nil {
			return fmt.Errorf("the image's env file %s: %w", im.envFile, err)
		}
		for _, l := range lines {
			name, value, _ := strings.Cut(l, "=")
			vars[name] = value
		}
	}
	im.stateDir = cmp.Or(cmd.String("state-dir"), vars["COLIBRI_MCP_STATE_DIR"], statedir.RootDefault)
	im.pinFile = cmp.Or(s.pinFile, vars["COLIBRI_MCP_PIN_FILE"])
	s.pinsInState = im.pinFile == ""
	if s.pinsInState {
		im.pinFile = path.Join(im.stateDir, "pins.json")
	}
	for what, p := range map[string]string{"the state folder": im.stateDir, "the pin file": im.pinFile} {
		if !filepath.IsAbs(p) {
			return fmt.Errorf("%s %s: with --root it is a path of the image, and must be absolute", what, p)
		}
	}
	stateHost, err := im.hostOf(im.stateDir)
	if err != nil {
		return fmt.Errorf("the state folder %s: %v", im.stateDir, err)
	}
	if s.pinFile, err = im.hostOf(im.pinFile); err != nil {
		return fmt.Errorf("the pin file %s: %v", im.pinFile, err)
	}
	im.stateErr = im.stateProblem(stateHost)
	s.state, s.pinErr = &statedir.Dir{Path: stateHost, Named: true, Err: im.stateErr}, nil
	return nil
}

// hostOf is the host path of the image path p with the links above its
// last component followed inside the image, and that component as it is:
// what colibri itself would refuse as a link (a lock, its env file, its
// state folder) is then seen as one.
func (im *image) hostOf(p string) (string, error) {
	p = path.Clean(p)
	if p == "/" {
		return im.root, nil
	}
	dir, err := im.host(path.Dir(p))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, path.Base(p)), nil
}

// stateProblem is what would keep the service from using its state folder
// in the image (host, its host path), judged as colibri and the rc.d
// script will judge it there: a missing folder is made at start (rc.d's
// prestart), an existing one must be a folder itself, writable by neither
// group nor others. Its owner is not judged: an image built by a user
// without privileges sets owners in its METALOG, not on the files.
func (im *image) stateProblem(host string) error {
	fi, err := os.Lstat(host)
	bad := func(reason string) error {
		return &statedir.Error{Path: im.stateDir, Reason: reason + " (in the image, " + host + ")", Named: true}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return bad(err.Error())
	case fi.Mode()&fs.ModeSymlink != 0:
		return bad("it is a symbolic link; colibri and the rc.d script use a folder itself: name the folder it points to")
	case !fi.IsDir():
		return bad("it is not a folder")
	case fi.Mode().Perm()&0o022 != 0:
		return bad(fmt.Sprintf("group or others may write to it (mode %04o): chmod 0700 it", fi.Mode().Perm()))
	}
	return nil
}

// loadImageRegistry reads the image's registry, with its paths as the
// image has them: relative ones are resolved against its folder in the
// image, not on the build host.
func loadImageRegistry(s *settings) (*registry.Registry, error) {
	f, err := os.Open(s.configPath)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &registry.Error{File: s.image.registry, Problems: []registry.Problem{{Message: "no registry in the image: run 'colibri-mcp init --root " + s.image.root + "'"}}}
		}
		return nil, err
	}
	defer f.Close()
	return registry.Parse(f, s.image.registry)
}

// varRef finds ${NAME} references: set where the image runs, never here.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// checkImage is check --root: each entry judged for the target OS, its
// command found in the image (an absolute one under the root, a bare one
// on the service's PATH there), its cwd and jail paths there, its ${NAME}s
// reported as set at run time. Nothing starts.
func checkImage(s *settings, asJSON bool, stdout io.Writer) error {
	start := time.Now()
	im := s.image
	out := &tools.CheckResult{ConfigPath: im.registry, OK: true, Servers: []tools.CheckServer{},
		EnvFile: im.envFile, StateDir: im.stateDir, PinFile: im.pinFile}
	reg, err := loadImageRegistry(s)
	if err == nil {
		// The image's pin file as the service will read it: a lock that
		// does not parse, or is a link, is an error; one that holds a
		// server the registry lacks, a warning.
		pins := pin.Open(s.pinFile, pin.Options{})
		pins.Configure(tools.PinConfig(reg))
		var warnings []string
		warnings, err = tools.PinWarnings(pins, reg)
		for _, w := range warnings {
			out.Warnings = append(out.Warnings, strings.ReplaceAll(w, s.pinFile, im.pinFile))
		}
		if err != nil {
			err = fmt.Errorf("the image's pin file (under %s): %s", im.root, strings.ReplaceAll(err.Error(), s.pinFile, im.pinFile))
		}
		out.OK = len(out.Warnings) == 0
	}
	if err != nil {
		out.OK, out.Error = false, tools.Detail(&failure.Error{Kind: failure.KindConfig, Err: err})
	} else {
		if !asJSON {
			termview.CheckRead(stdout, im.registry, len(reg.Names()))
			termview.CheckImageFiles(stdout, out)
		}
		for _, name := range reg.Names() {
			srv := reg.Servers[name]
			r := tools.CheckServer{Server: name, OK: true, Confinement: srv.ConfinementLine(), Spare: srv.Spare, RunTime: runTimeVars(srv)}
			problem := im.judge(srv)
			if what := statedir.Needs(reg, srv, s.pinsInState); problem == "" && what != "" && im.stateErr != nil {
				problem = fmt.Sprintf("%v (needed for %s)", im.stateErr, what)
			}
			if problem != "" {
				r.OK, r.Error = false, tools.Detail(&failure.Error{Kind: failure.KindConfig, Server: name, Err: errors.New(problem)})
				out.OK = false
			}
			out.Servers = append(out.Servers, r)
			if !asJSON {
				termview.CheckLine(stdout, r)
			}
		}
	}
	if asJSON {
		termview.JSON(stdout, out)
	} else {
		termview.CheckEnd(stdout, out, im.registry, time.Since(start))
	}
	switch {
	case out.Error != nil:
		return silent(exitUsage)
	case !out.OK:
		return silent(exitFailed)
	}
	return nil
}

// runTimeVars are the variables srv's entry reads at run time.
func runTimeVars(srv *registry.Server) []string {
	seen := map[string]bool{}
	texts := append([]string{srv.Command, srv.URL, srv.Cwd}, srv.Args...)
	for _, v := range srv.Env {
		texts = append(texts, v)
	}
	for _, v := range srv.Headers {
		texts = append(texts, v)
	}
	if srv.OAuth != nil {
		texts = append(texts, srv.OAuth.ClientSecret)
	}
	for _, t := range texts {
		for _, m := range varRef.FindAllStringSubmatch(t, -1) {
			seen[m[1]] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// judge is what keeps srv from running in the image ("" when nothing).
func (im *image) judge(srv *registry.Server) string {
	if srv.URL != "" {
		return "" // a remote server: nothing of it is in the image
	}
	sandboxed := srv.Sandbox != nil && !srv.Sandbox.Off
	switch {
	case sandboxed && im.targetOS == "freebsd":
		return fmt.Sprintf(`%s: "sandbox" is Linux confinement; on FreeBSD confine the server with "jail" (or --target-os linux)`, srv.Sandbox.At)
	case srv.Jail != nil && im.targetOS == "linux":
		return `"jail" is FreeBSD's confinement; on Linux use "sandbox" (or --target-os freebsd)`
	}
	if j := srv.Jail; j != nil {
		for _, p := range []string{j.Path, j.RootPath} {
			if p != "" && !im.isDir(p) {
				return fmt.Sprintf("jail folder %s is not in the image", p)
			}
		}
		return "" // the command is the jail's, inside it
	}
	if sandboxed {
		for _, p := range append(slices.Clone(srv.Sandbox.Read), srv.Sandbox.Write...) {
			if _, _, err := statInImage(im.root, p); err != nil && !strings.Contains(p, "${") {
				return fmt.Sprintf("%s: %s is not in the image", srv.Sandbox.At, p)
			}
		}
	}
	if srv.Cwd != "" && !strings.Contains(srv.Cwd, "${") && !im.isDir(srv.Cwd) {
		return fmt.Sprintf("cwd %s is not a folder in the image", srv.Cwd)
	}
	if strings.Contains(srv.Command, "${") {
		return ""
	}
	if strings.Contains(srv.Command, "/") {
		if !im.isExecutable(srv.Command) {
			return fmt.Sprintf("command %s is not an executable file in the image (under %s)", srv.Command, im.root)
		}
		return ""
	}
	path := imagePath
	if p, ok := srv.Env["PATH"]; ok && !strings.Contains(p, "${") {
		path = p
	}
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) && im.isExecutable(filepath.Join(dir, srv.Command)) {
			return ""
		}
	}
	return fmt.Sprintf("command %q is not on the image's PATH (%s, under %s): install it in the image, or name it by its path there", srv.Command, path, im.root)
}

func (im *image) isDir(p string) bool {
	_, fi, err := statInImage(im.root, p)
	return err == nil && fi.IsDir()
}

func (im *image) isExecutable(p string) bool {
	_, fi, err := statInImage(im.root, p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
