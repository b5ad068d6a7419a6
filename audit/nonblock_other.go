//go:build !unix

package audit

const nonblock = 0
