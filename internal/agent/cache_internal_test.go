package agent

import (
	"testing"
	"time"
)

// An agent read before a drop is not kept: it may be older than the change
// the drop was for.
func TestCachePutAfterDrop(t *testing.T) {
	var c cache
	now := time.Now()
	gen := c.generation()
	c.drop("helper") // the change, made while the old agent was being read
	c.put(&Agent{ID: "helper"}, gen, now)
	if c.get("helper", now) != nil {
		t.Error("an agent read before a drop was kept")
	}
	c.put(&Agent{ID: "helper"}, c.generation(), now)
	if c.get("helper", now) == nil {
		t.Error("an agent read after the drop was not kept")
	}
}
