package main

import "golang.org/x/sys/unix"

// fionread asks how many bytes a pipe holds unread (Linux spells it TIOCINQ).
const fionread = unix.TIOCINQ
