package main

// pinFakes: Fakes whose tool definitions change between or during sessions (CONTRACT.md section 13).
var pinFakes = map[string]func(){}
