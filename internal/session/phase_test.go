package session

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A call's timeout restarts at each kick (progress), but the call ends at
// its ceiling however often it is kicked; with no kick it ends at its
// timeout, and a phase with no ceiling above its timeout is not extended.
func TestTimerKickStopsAtTheCeiling(t *testing.T) {
	for _, tc := range []struct {
		name       string
		d, ceiling time.Duration
		kick       bool
		want       time.Duration
		cause      error
	}{
		{"kicked", time.Second, 5 * time.Second, true, 5 * time.Second, errCeiling},
		{"not kicked", time.Second, 5 * time.Second, false, time.Second, ErrPhaseTimeout},
		{"no ceiling", time.Second, 0, true, time.Second, ErrPhaseTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				tm := NewTimer(context.Background(), tc.d, tc.ceiling)
				defer tm.Stop()
				for tm.Context().Err() == nil && time.Since(start) < time.Minute {
					time.Sleep(tc.d / 2) // the bubble's clock: no real wait
					if tc.kick {
						tm.kick()
					}
				}
				synctest.Wait()
				ended := time.Since(start)
				if cause := context.Cause(tm.Context()); cause != tc.cause || !tm.Expired() {
					t.Errorf("ended by %v (expired %v), want %v", cause, tm.Expired(), tc.cause)
				}
				// It ends at the first sleep that follows its end.
				if ended < tc.want || ended > tc.want+tc.d/2 {
					t.Errorf("ended after %s, want %s", ended, tc.want)
				}
			})
		})
	}
}
