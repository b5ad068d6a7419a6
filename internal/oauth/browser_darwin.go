package oauth

// browserCommand opens a URL in the user's browser.
const browserCommand = "open"
