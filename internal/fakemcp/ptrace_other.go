//go:build !linux

package main

import "errors"

func ptraceAttach(int) error { return errors.New("ptrace: Linux only in this fake") }
