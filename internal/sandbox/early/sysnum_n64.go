//go:build linux && (mips64 || mips64le)

package early

// MIPS n64 numbers its system calls from 5000.
const (
	sysCloseRange            = 5000 + 436
	sysLandlockCreateRuleset = 5000 + 444
	sysLandlockAddRule       = 5000 + 445
	sysLandlockRestrictSelf  = 5000 + 446
	sysPidfdOpen             = 5000 + 434
)
