//go:build !unix

package safefile

const extraFlags = 0
