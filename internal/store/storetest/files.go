package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/store"
)

func newFile(owner, name string, minute int) *file.File {
	return &file.File{ID: file.NewID(), Owner: owner, Name: name, MIMEType: "application/pdf", CreatedAt: at(minute)}
}

func createFile(t *testing.T, s store.Store, owner, name string) *file.File {
	t.Helper()
	f := newFile(owner, name, 4)
	must(t, s.CreateFile(t.Context(), f), "CreateFile "+name)
	return f
}

func fileIDs(fs []*file.File) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

var fileTests = []test{
	{"CreateAndGet", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "files@example.com")
		f := newFile(u.ID, "Rapport «2025» 🚀.pdf", 4)
		f.MIMEType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
		must(t, s.CreateFile(t.Context(), f), "CreateFile")
		if f.CreatedAt != stored(at(4)) {
			t.Errorf("CreateFile left CreatedAt %v, want %v", f.CreatedAt, stored(at(4)))
		}
		nonZeroFields(t, "the created file", *f)
		got, err := s.GetFile(t.Context(), f.ID)
		must(t, err, "GetFile")
		if d := cmp.Diff(f, got); d != "" {
			t.Errorf("GetFile (-want +got):\n%s", d)
		}
		wantUTC(t, "GetFile", got.CreatedAt)
	}},
	{"ZeroTimeIsNow", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "files@example.com")
		f := &file.File{ID: file.NewID(), Owner: u.ID, Name: "a.txt", MIMEType: "text/plain"}
		before := time.Now().Add(-time.Second)
		must(t, s.CreateFile(t.Context(), f), "CreateFile")
		wantUTC(t, "CreatedAt", f.CreatedAt)
		if f.CreatedAt.Before(before) || f.CreatedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("CreatedAt = %v, want about now", f.CreatedAt)
		}
	}},
	{"NotFound", func(t *testing.T, s store.Store) {
		f, err := s.GetFile(t.Context(), "file_missing")
		wantKind(t, err, fault.NotFound, "GetFile of a missing file")
		if f != nil {
			t.Errorf("GetFile returned %+v with its error", f)
		}
	}},
	{"DuplicateID", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "files@example.com")
		f := createFile(t, s, u.ID, "a.pdf")
		again := newFile(u.ID, "b.pdf", 5)
		again.ID = f.ID
		err := s.CreateFile(t.Context(), again)
		wantKind(t, err, fault.Conflict, "CreateFile with a taken id")
		got, err := s.GetFile(t.Context(), f.ID)
		must(t, err, "GetFile")
		if got.Name != "a.pdf" {
			t.Errorf("a refused CreateFile changed the stored file to %+v", got)
		}
	}},
	{"MissingOwner", func(t *testing.T, s store.Store) {
		err := s.CreateFile(t.Context(), newFile("user_missing", "a.pdf", 1))
		wantKind(t, err, fault.NotFound, "CreateFile for a missing owner")
	}},
	{"GetFilesInGivenOrder", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		a := createFile(t, s, alice.ID, "a.pdf")
		b := createFile(t, s, bob.ID, "b.docx")
		c := createFile(t, s, alice.ID, "c.xlsx")
		got, err := s.GetFiles(ctx, []string{c.ID, "file_missing", a.ID, b.ID, c.ID, a.ID})
		must(t, err, "GetFiles")
		if d := cmp.Diff([]*file.File{c, a, b}, got); d != "" {
			t.Errorf("GetFiles, want the given order, missing ids skipped, repeats once (-want +got):\n%s", d)
		}
		for _, ids := range [][]string{nil, {}, {"file_missing", "file_gone"}} {
			got, err := s.GetFiles(ctx, ids)
			must(t, err, fmt.Sprintf("GetFiles(%q)", ids))
			if got == nil || len(got) != 0 {
				t.Errorf("GetFiles(%q) = %#v, want an empty list", ids, got)
			}
		}
	}},
	{"GetFilesMany", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "files@example.com")
		var want []*file.File
		for i := range 1100 {
			want = append(want, createFile(t, s, u.ID, fmt.Sprintf("f%04d.txt", i)))
		}
		slices.Reverse(want)
		ids := fileIDs(want)
		ids = slices.Insert(ids, 600, "file_missing")
		got, err := s.GetFiles(t.Context(), ids)
		must(t, err, "GetFiles")
		if d := cmp.Diff(fileIDs(want), fileIDs(got)); d != "" {
			t.Errorf("GetFiles of %d ids (-want +got):\n%s", len(ids), d)
		}
	}},
}
