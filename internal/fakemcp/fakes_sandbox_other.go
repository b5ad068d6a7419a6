//go:build !linux

package main

func tryMore(string, string, string, int, int) (string, error) { return "", errNoOp }

func inetSocket(string, string) (string, error) { return "", errNoOp }
