//go:build !unix

package safefile

const extraFlags = 0

const followFlags = 0
