package run

import "time"

// SetWriterRetry sets how often (every), for how long (until) and how many
// times (tries) the writer of s tries records again; call it before s starts
// a run.
func SetWriterRetry(s *Service, every, until time.Duration, tries int) {
	w := s.writer()
	w.retryEvery, w.retryFor, w.maxTries = every, until, tries
}
