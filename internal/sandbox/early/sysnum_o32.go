//go:build linux && (mips || mipsle)

package early

// MIPS o32 numbers its system calls from 4000.
const (
	sysCloseRange            = 4000 + 436
	sysLandlockCreateRuleset = 4000 + 444
	sysLandlockAddRule       = 4000 + 445
	sysLandlockRestrictSelf  = 4000 + 446
	sysPidfdOpen             = 4000 + 434
)
