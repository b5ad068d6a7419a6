package registry

// sandboxAvailable: the Linux sandbox exists here.
const sandboxAvailable = true

const sandboxElsewhere = ""
