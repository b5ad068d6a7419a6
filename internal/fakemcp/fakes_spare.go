package main

// spareFakes: Fakes for spare processes (CONTRACT.md section 15).
var spareFakes = map[string]func(){}
