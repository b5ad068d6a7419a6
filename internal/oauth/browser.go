package oauth

import (
	"fmt"
	"os/exec"
	"strings"
)

// openBrowser starts the desktop's browser on url, without a shell, and
// does not wait for the browser to close.
func openBrowser(url string) error {
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return fmt.Errorf("not opening %q: not an http(s) URL", url)
	}
	cmd := exec.Command(browserCommand, url)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", browserCommand, err)
	}
	go cmd.Wait() // reap it
	return nil
}
