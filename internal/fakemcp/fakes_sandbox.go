package main

// sandboxFakes: Fakes that try to break out of the Linux sandbox (CONTRACT.md section 14).
var sandboxFakes = map[string]func(){}
