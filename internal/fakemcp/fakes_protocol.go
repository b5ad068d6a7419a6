package main

// protocolFakes: Fakes that speak or ignore MCP 2026-07-28.
var protocolFakes = map[string]func(){}
