package run

// FailedEnd returns the last events of a run that failed without its process
// ending it (the process died): an error event with the reason, naming the
// run's agent, and run.finished with the run's final state and its answer,
// numbered after last, the run's last stored event. They have the shape of
// the events a run ends with in execute, so that a client replaying the run
// sees it end the same way: every run's events end with run.finished.
func FailedEnd(r *Run, answer *Message, last int64) []Event {
	return []Event{
		newEvent(r.ID, last+1, RunError{Message: r.Error, AgentID: r.AgentID}),
		newEvent(r.ID, last+2, RunFinished{Status: r.Status, Error: r.Error, Usage: r.Usage, Message: answer}),
	}
}
