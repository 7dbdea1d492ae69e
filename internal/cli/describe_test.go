package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/relay-ai/relay/internal/fault"
)

// An error is told as the API tells it: a refusal's message without the
// database's words under it; an internal error with its cause.
func TestDescribe(t *testing.T) {
	dup := errors.New("constraint failed: UNIQUE constraint failed: users.email (2067)")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fault.Wrap(fault.Conflict, dup, "a user with email %q already exists", "ann@example.com"), `a user with email "ann@example.com" already exists`},
		{fmt.Errorf("adding ann: %w", fault.Wrap(fault.Conflict, dup, "already exists")), "adding ann: already exists"},
		{&fault.Error{Kind: fault.Invalid, Message: "invalid schedule", Fields: []fault.FieldError{{Field: "cron", Message: "never fires"}}}, "invalid schedule\n  cron: never fires"},
		{fmt.Errorf("reading: %w", errors.New("disk on fire")), "reading: disk on fire"},
		{fault.Wrap(fault.Internal, errors.New("disk on fire"), "storing"), "storing: disk on fire"},
	} {
		if got := describe(tc.err); got != tc.want {
			t.Errorf("describe(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
