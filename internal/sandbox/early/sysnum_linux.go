//go:build linux && !mips && !mipsle && !mips64 && !mips64le

package early

// System calls newer than package syscall's tables: their numbers are the
// same on every architecture since Linux 5.1's shared table, but MIPS's.
const (
	sysCloseRange            = 436
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446
	sysPidfdOpen             = 434
)
