//go:build !freebsd

package main

import "context"

// removeStaleJails: there are no jails outside FreeBSD.
func removeStaleJails(context.Context, *settings) {}
