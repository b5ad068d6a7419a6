//go:build !unix

package opfile

const extraFlags = 0
