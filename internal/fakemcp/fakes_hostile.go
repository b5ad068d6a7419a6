package main

// hostileFakes: Fakes of the third hostile round: costs a hosted server controls.
var hostileFakes = map[string]func(){}
