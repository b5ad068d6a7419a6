//go:build !darwin

package oauth

// browserCommand opens a URL in the user's browser (xdg-utils; on FreeBSD
// the devel/xdg-utils package).
const browserCommand = "xdg-open"
