package main

// An image being built read as if its folder were / (--root, root.go;
// docs/freebsd.md "Building an appliance image"): resolveInImage turns a
// path of the image into the host path of that file, following the
// image's symbolic links as the image itself would — an absolute target
// starts again at the image's root, ".." stops there — so that nothing
// outside the folder is ever read or written, whatever the image's links
// say. Only the command line reads images: this is a file of it, not a
// package (no library has an image path to resolve).

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxImageLinks bounds the symbolic links one Resolve follows (Linux's and
// FreeBSD's own bound is about as many): a loop fails instead of spinning.
const maxImageLinks = 40

// errImageLoop is a path whose links do not end within maxImageLinks.
var errImageLoop = errors.New("too many levels of symbolic links")

// resolveInImage is the host path of the image path p under root. Every link on
// the way is followed inside root; the last component's link too. A
// component that does not exist ends the walk: the rest is joined as it is
// (what a file to be created there would be). root must be absolute and
// clean.
func resolveInImage(root, p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path of the image", p)
	}
	rest := strings.Split(p, "/")
	cur := "/" // the image path resolved so far
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur) // "/" stays "/": .. stops at the root
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(filepath.Join(root, next))
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.Join(root, next, filepath.Join(rest...)), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxImageLinks {
			return "", fmt.Errorf("%s: %w", p, errImageLoop)
		}
		target, err := os.Readlink(filepath.Join(root, next))
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return filepath.Join(root, cur), nil
}

// statInImage is os.Lstat of the image path p under root (links followed inside
// root), with the host path it resolved to.
func statInImage(root, p string) (string, fs.FileInfo, error) {
	host, err := resolveInImage(root, p)
	if err != nil {
		return "", nil, err
	}
	fi, err := os.Lstat(host)
	return host, fi, err
}
