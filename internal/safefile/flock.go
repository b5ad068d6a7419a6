// Flock takes an exclusive flock(2) on an open file without ever
// blocking in the kernel: it polls until a deadline, so that a process that
// holds the lock and is stuck (stopped, in a debugger) cannot hang colibri.
// The registry's editors, the pin file and the OAuth token files share it.
//
//	f, _ := OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
//	unlock, err := Flock(f, time.Now().Add(10*time.Second), nil)
//	if errors.Is(err, ErrHeld) { … another process has it … }
//	defer unlock()

package safefile

import "errors"

// ErrHeld is wrapped by Flock's error when the deadline passed with the lock
// still held by another process.
var ErrHeld = errors.New("the lock is held by another process")
