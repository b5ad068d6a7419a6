//go:build !linux

package main

// fionread asks how many bytes a pipe holds unread: FIONREAD, _IOR('f',
// 127, int) on the BSDs and macOS, which golang.org/x/sys does not name.
const fionread = 0x4004667f
