package agent

import "time"

// SetClock has the cache of s read the time from now.
func SetClock(s *Service, now func() time.Time) { s.now = now }
