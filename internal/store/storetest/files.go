package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

var fileTests = append([]test{
	{"CreateAndGet", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "files@example.com")
		f := newFile(u.ID, "Rapport «2025» 🚀.pdf", 4)
		f.MIMEType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
		f.Size, f.Status, f.Progress, f.Chunks, f.UpdatedAt = 12345, file.Failed, 40, 7, at(9)
		f.Error, f.Note = "corrupt: «zip» ended early", "a note 🚀"
		must(t, s.CreateFile(t.Context(), f), "CreateFile")
		if f.UpdatedAt != stored(at(9)) {
			t.Errorf("CreateFile left UpdatedAt %v, want %v", f.UpdatedAt, stored(at(9)))
		}
		if f.CreatedAt != stored(at(4)) {
			t.Errorf("CreateFile left CreatedAt %v, want %v", f.CreatedAt, stored(at(4)))
		}
		nonZeroFields(t, "the created file", *f)
		got, err := s.GetFile(t.Context(), f.ID)
		must(t, err, "GetFile")
		if d := cmp.Diff(f, got); d != "" {
			t.Errorf("GetFile (-want +got):\n%s", d)
		}
		wantUTC(t, "GetFile", got.CreatedAt, got.UpdatedAt)
	}},
	{"Defaults", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "files@example.com")
		f := createFile(t, s, u.ID, "a.pdf")
		if f.Status != file.Pending || f.UpdatedAt != f.CreatedAt {
			t.Errorf("CreateFile of a zero status and update time: %q, %v; want pending, %v", f.Status, f.UpdatedAt, f.CreatedAt)
		}
		bad := newFile(u.ID, "b.pdf", 1)
		bad.Status = "done"
		wantKind(t, s.CreateFile(t.Context(), bad), fault.Invalid, "CreateFile with an unknown status")
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
}, fileContentTests...)

func fileNames(fs []*file.File) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}

// claimAll claims until none is left and returns the claims.
func claimAll(t *testing.T, s store.Store, now time.Time) []*file.Claim {
	t.Helper()
	var cs []*file.Claim
	for {
		c, ok, err := s.ClaimFile(t.Context(), now, time.Minute)
		must(t, err, "ClaimFile")
		if !ok {
			return cs
		}
		cs = append(cs, c)
	}
}

// readyFile creates a file of owner and stores chunks for it through a claim,
// ending ready.
func readyFile(t *testing.T, s store.Store, owner, name string, chunks ...file.Chunk) *file.File {
	t.Helper()
	ctx := t.Context()
	f := createFile(t, s, owner, name)
	// Claim until this file comes up: other pending files are set aside.
	for {
		c, ok, err := s.ClaimFile(ctx, time.Now(), time.Minute)
		must(t, err, "ClaimFile")
		if !ok {
			t.Fatalf("file %s was never claimed", name)
		}
		if c.File.ID != f.ID {
			must(t, s.FinishFile(ctx, c, file.Outcome{Status: file.Failed, Error: "set aside"}), "FinishFile")
			continue
		}
		for i := range chunks {
			chunks[i].Index = i
			if chunks[i].Page == 0 {
				chunks[i].Page = 1
			}
		}
		must(t, s.AddFileChunks(ctx, c, chunks), "AddFileChunks")
		must(t, s.FinishFile(ctx, c, file.Outcome{Status: file.Ready}), "FinishFile")
		return c.File
	}
}

func text(texts ...string) []file.Chunk {
	cs := make([]file.Chunk, len(texts))
	for i, tx := range texts {
		cs[i] = file.Chunk{Index: i, Page: 1, Text: tx}
	}
	return cs
}

func hitTexts(hs []file.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Text
	}
	return out
}

func wantScores(t *testing.T, what string, hs []file.Hit) {
	t.Helper()
	for i, h := range hs {
		if h.Score <= 0 || h.Score > 1 {
			t.Errorf("%s: hit %d scores %v, want in (0, 1]", what, i, h.Score)
		}
		if i > 0 && h.Score > hs[i-1].Score {
			t.Errorf("%s: hit %d scores %v, above the one before (%v)", what, i, h.Score, hs[i-1].Score)
		}
	}
}

var fileContentTests = []test{
	{"ListOwnNewestFirst", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		for i, name := range []string{"old.pdf", "mid.pdf", "new.pdf"} {
			must(t, s.CreateFile(ctx, newFile(alice.ID, name, 10+i)), "CreateFile")
		}
		createFile(t, s, bob.ID, "bobs.pdf")
		got, err := s.ListFiles(ctx, alice.ID)
		must(t, err, "ListFiles")
		if d := cmp.Diff([]string{"new.pdf", "mid.pdf", "old.pdf"}, fileNames(got)); d != "" {
			t.Errorf("ListFiles (-want +got):\n%s", d)
		}
		got, err = s.ListFiles(ctx, "user_missing")
		must(t, err, "ListFiles")
		if got == nil || len(got) != 0 {
			t.Errorf("ListFiles of a user without files = %#v, want an empty list", got)
		}
	}},
	{"Usage", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		for i, size := range []int64{3 << 30, 5, 0} { // more than 32 bits together
			f := newFile(alice.ID, fmt.Sprintf("%d.pdf", i), 10+i)
			f.Size = size
			must(t, s.CreateFile(ctx, f), "CreateFile")
		}
		createFile(t, s, bob.ID, "bobs.pdf")
		for _, c := range []struct {
			owner string
			files int
			bytes int64
		}{{alice.ID, 3, 3<<30 + 5}, {bob.ID, 1, 0}, {"user_missing", 0, 0}} {
			n, size, err := s.FileUsage(ctx, c.owner)
			must(t, err, "FileUsage")
			if n != c.files || size != c.bytes {
				t.Errorf("FileUsage(%s) = %d files, %d bytes; want %d, %d", c.owner, n, size, c.files, c.bytes)
			}
		}
	}},
	{"CreateWithin", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		alice := createUser(t, s, "alice@example.com")
		bob := createUser(t, s, "bob@example.com")
		createFile(t, s, bob.ID, "bobs.pdf") // another owner's files do not count
		// Uploads of one owner at once: of 24 files of 30 bytes within 100,
		// three are recorded, whatever the order.
		bound := file.Bound{Files: 5, Bytes: 100}
		stored, errs := atOnce(24, func(i int) error {
			f := newFile(alice.ID, fmt.Sprintf("%d.pdf", i), 10+i)
			f.Size = 30
			return s.CreateFileWithin(ctx, f, bound)
		}, func(err error) bool {
			var over *file.OverBound
			return errors.As(err, &over) && !over.Files
		})
		if stored != 3 || len(errs) != 0 {
			t.Errorf("of 24 files of 30 bytes within 100: %d recorded, unexpected errors %v; want 3, none", stored, errs)
		}
		// Past the number of files; a zero bound is no bound.
		for i := range 2 {
			must(t, s.CreateFileWithin(ctx, newFile(alice.ID, fmt.Sprintf("empty%d.pdf", i), 20+i), bound), "CreateFileWithin")
		}
		var over *file.OverBound
		if err := s.CreateFileWithin(ctx, newFile(alice.ID, "sixth.pdf", 30), bound); !errors.As(err, &over) || !over.Files {
			t.Errorf("a sixth file within 5: %v; want an OverBound of files", err)
		}
		must(t, s.CreateFileWithin(ctx, newFile(alice.ID, "free.pdf", 31), file.Bound{}), "CreateFileWithin without a bound")
		n, size, err := s.FileUsage(ctx, alice.ID)
		must(t, err, "FileUsage")
		if n != 6 || size != 90 {
			t.Errorf("alice has %d files, %d bytes; want 6, 90", n, size)
		}
	}},
	{"ContentsInParts", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "files@example.com")
		id := file.NewID()
		var want []byte
		for seq := range 3 {
			part := bytes.Repeat([]byte{byte(seq), 0, 0xff, '\''}, 300_000)
			must(t, s.PutFilePart(ctx, id, seq, part), "PutFilePart")
			want = append(want, part...)
		}
		wantKind(t, s.PutFilePart(ctx, id, 1, []byte("again")), fault.Conflict, "PutFilePart of a stored part")
		f := &file.File{ID: id, Owner: u.ID, Name: "big.bin", MIMEType: "application/octet-stream", Size: int64(len(want))}
		must(t, s.CreateFile(ctx, f), "CreateFile")
		got, err := s.FileContents(ctx, id, f.Size)
		must(t, err, "FileContents")
		if !bytes.Equal(got, want) {
			t.Errorf("FileContents returned %d bytes, not the %d stored", len(got), len(want))
		}
		if got, err := s.FileContents(ctx, "file_missing", 0); err != nil || len(got) != 0 {
			t.Errorf("FileContents of a file without parts = %d bytes, %v; want none", len(got), err)
		}
		must(t, s.DeleteFile(ctx, id), "DeleteFile")
		if got, err := s.FileContents(ctx, id, 0); err != nil || len(got) != 0 {
			t.Errorf("contents after DeleteFile: %d bytes, %v; want none", len(got), err)
		}
		_, err = s.GetFile(ctx, id)
		wantKind(t, err, fault.NotFound, "GetFile after DeleteFile")
		wantKind(t, s.DeleteFile(ctx, id), fault.NotFound, "DeleteFile of a deleted file")

		orphan := file.NewID()
		must(t, s.PutFilePart(ctx, orphan, 0, []byte("abandoned upload")), "PutFilePart")
		must(t, s.DeleteFileParts(ctx, orphan), "DeleteFileParts")
		if got, _ := s.FileContents(ctx, orphan, 0); len(got) != 0 {
			t.Errorf("DeleteFileParts left %q", got)
		}
	}},
	{"SweepCutOffUploads", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "sweep@example.com")
		kept := createFile(t, s, u.ID, "kept.txt")
		must(t, s.PutFilePart(ctx, kept.ID, 0, []byte("a finished upload")), "PutFilePart")
		orphan := file.NewID()
		for seq := range 2 {
			must(t, s.PutFilePart(ctx, orphan, seq, []byte("an upload cut off")), "PutFilePart")
		}
		// Parts younger than the cutoff may belong to an upload in progress.
		if _, err := s.SweepFileParts(ctx, time.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.FileContents(ctx, orphan, 0); len(got) == 0 {
			t.Fatal("SweepFileParts removed the parts of an upload that may still be in progress")
		}
		n, err := s.SweepFileParts(ctx, time.Now().Add(time.Hour))
		must(t, err, "SweepFileParts")
		if n < 2 {
			t.Errorf("SweepFileParts deleted %d parts, want the orphan's 2", n)
		}
		if got, _ := s.FileContents(ctx, orphan, 0); len(got) != 0 {
			t.Errorf("the cut-off upload's parts are still there: %q", got)
		}
		if got, _ := s.FileContents(ctx, kept.ID, 0); string(got) != "a finished upload" {
			t.Errorf("SweepFileParts touched a file's contents: %q", got)
		}
	}},
	{"ClaimEachOnce", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "files@example.com")
		want := map[string]bool{}
		for i := range 30 {
			want[createFile(t, s, u.ID, fmt.Sprintf("f%d.txt", i)).ID] = true
		}
		done := createFile(t, s, u.ID, "done.txt")
		must(t, s.CreateFile(ctx, &file.File{ID: file.NewID(), Owner: u.ID, Name: "ready.txt", MIMEType: "text/plain", Status: file.Ready}), "CreateFile")
		_ = done
		var (
			mu     sync.Mutex
			got    = map[string]int{}
			wg     sync.WaitGroup
			failed error
		)
		for range 8 {
			wg.Go(func() {
				for {
					c, ok, err := s.ClaimFile(ctx, time.Now(), time.Minute)
					mu.Lock()
					if err != nil {
						failed = err
					}
					if ok {
						got[c.File.ID]++
						if c.File.Status != file.Processing || c.Token == "" {
							t.Errorf("claimed file is %q with token %q; want processing and a token", c.File.Status, c.Token)
						}
					}
					mu.Unlock()
					if !ok || err != nil {
						return
					}
				}
			})
		}
		wg.Wait()
		must(t, failed, "ClaimFile")
		want[done.ID] = true
		if len(got) != len(want) {
			t.Errorf("%d files claimed, want %d (every pending one, not the ready one)", len(got), len(want))
		}
		for id, n := range got {
			if n != 1 || !want[id] {
				t.Errorf("file %s claimed %d times (pending: %v)", id, n, want[id])
			}
		}
	}},
	{"WaitingFiles", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "files@example.com")
		now := time.Now()
		waiting := func(at time.Time, want int, when string) {
			t.Helper()
			n, err := s.WaitingFiles(ctx, at)
			must(t, err, "WaitingFiles")
			if n != want {
				t.Errorf("%s: %d files waiting, want %d", when, n, want)
			}
		}
		waiting(now, 0, "no file")
		for i := range 3 {
			createFile(t, s, u.ID, fmt.Sprintf("f%d.txt", i))
		}
		must(t, s.CreateFile(ctx, &file.File{ID: file.NewID(), Owner: u.ID, Name: "ready.txt", MIMEType: "text/plain", Status: file.Ready}), "CreateFile")
		waiting(now, 3, "three pending, one ready")
		c, ok, err := s.ClaimFile(ctx, now, time.Minute)
		if err != nil || !ok {
			t.Fatalf("ClaimFile: %v, %v", ok, err)
		}
		waiting(now, 2, "one claimed")
		waiting(now.Add(61*time.Second), 3, "its lease ran out")
		must(t, s.FinishFile(ctx, c, file.Outcome{Status: file.Ready}), "FinishFile")
		waiting(now.Add(61*time.Second), 2, "it is ready")
	}},
	{"LeaseRunsOut", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "files@example.com")
		f := createFile(t, s, u.ID, "stuck.txt")
		now := time.Now()
		first := claimAll(t, s, now)
		if len(first) != 1 || first[0].File.ID != f.ID {
			t.Fatalf("claims %+v, want the one file", first)
		}
		must(t, s.AddFileChunks(ctx, first[0], text("from the first claim")), "AddFileChunks")
		must(t, s.UpdateFileProgress(ctx, first[0], 30, now.Add(time.Minute)), "UpdateFileProgress")
		if got, _ := s.GetFile(ctx, f.ID); got.Progress != 30 || got.Status != file.Processing {
			t.Errorf("after progress: %q at %d%%, want processing at 30%%", got.Status, got.Progress)
		}
		if again := claimAll(t, s, now.Add(59*time.Second)); len(again) != 0 {
			t.Fatalf("a file was claimed again within its lease")
		}
		second := claimAll(t, s, now.Add(61*time.Second))
		if len(second) != 1 || second[0].File.ID != f.ID || second[0].Token == first[0].Token || second[0].File.Progress != 0 {
			t.Fatalf("claims after the lease %+v, want the file again, with a new token, at 0%%", second)
		}
		wantKind(t, s.UpdateFileProgress(ctx, first[0], 50, now.Add(time.Hour)), fault.Conflict, "UpdateFileProgress of a lost claim")
		wantKind(t, s.AddFileChunks(ctx, first[0], text("late")), fault.Conflict, "AddFileChunks of a lost claim")
		wantKind(t, s.FinishFile(ctx, first[0], file.Outcome{Status: file.Ready}), fault.Conflict, "FinishFile of a lost claim")
		must(t, s.AddFileChunks(ctx, second[0], text("from the second claim", "and more")), "AddFileChunks")
		must(t, s.FinishFile(ctx, second[0], file.Outcome{Status: file.Ready, Note: "two chunks"}), "FinishFile")
		got, err := s.GetFile(ctx, f.ID)
		must(t, err, "GetFile")
		if got.Status != file.Ready || got.Progress != 100 || got.Chunks != 2 || got.Note != "two chunks" || got.Error != "" {
			t.Errorf("finished file = %+v, want ready at 100%% with 2 chunks and the note", got)
		}
		if d := cmp.Diff(second[0].File, got); d != "" {
			t.Errorf("FinishFile did not write back the stored file (-claim +stored):\n%s", d)
		}
		hits, err := s.SearchText(ctx, file.Query{FileIDs: []string{f.ID}, Text: "claim"})
		must(t, err, "SearchText")
		if d := cmp.Diff([]string{"from the second claim"}, hitTexts(hits)); d != "" {
			t.Errorf("the first claim's chunks survived the second claim (-want +got):\n%s", d)
		}
		wantKind(t, s.FinishFile(ctx, second[0], file.Outcome{Status: file.Ready}), fault.Conflict, "FinishFile twice")
		if again := claimAll(t, s, now.Add(time.Hour)); len(again) != 0 {
			t.Errorf("a ready file was claimed")
		}
	}},
	{"Failed", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "files@example.com")
		f := createFile(t, s, u.ID, "bad.docx")
		c := claimAll(t, s, time.Now())[0]
		wantKind(t, s.FinishFile(ctx, c, file.Outcome{Status: file.Pending}), fault.Invalid, "FinishFile as pending")
		must(t, s.FinishFile(ctx, c, file.Outcome{Status: file.Failed, Error: "not a zip file"}), "FinishFile")
		got, err := s.GetFile(ctx, f.ID)
		must(t, err, "GetFile")
		if got.Status != file.Failed || got.Error != "not a zip file" || got.Chunks != 0 {
			t.Errorf("failed file = %+v", got)
		}
	}},
	{"DeleteTakesChunks", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "files@example.com")
		a := readyFile(t, s, u.ID, "a.txt", text("the turbine blades are inspected")...)
		b := readyFile(t, s, u.ID, "b.txt", text("the turbine housing is painted")...)
		must(t, s.DeleteFile(ctx, a.ID), "DeleteFile")
		hits, err := s.SearchText(ctx, file.Query{FileIDs: []string{a.ID, b.ID}, Text: "turbine"})
		must(t, err, "SearchText")
		if len(hits) != 1 || hits[0].FileID != b.ID {
			t.Errorf("hits after deleting a: %+v, want only b's chunk", hits)
		}
	}},
	{"SearchText", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "files@example.com")
		manual := readyFile(t, s, u.ID, "manual.txt", []file.Chunk{
			{Text: "Safety: wear gloves when handling the battery.", Page: 1},
			{Text: "The pump must be serviced every 500 hours; servicing the pump takes an hour.", Page: 2},
			{Text: "Warranty terms are described in the appendix.", Page: 3},
			{Text: "The pump's filter is cleaned monthly.", Page: 4},
		}...)
		other := readyFile(t, s, u.ID, "other.txt", text("The pump station is closed on Sundays.", "Nothing about that here.")...)
		hidden := readyFile(t, s, u.ID, "hidden.txt", text("pump pump pump service service")...)
		ids := []string{manual.ID, other.ID}

		hits, err := s.SearchText(ctx, file.Query{FileIDs: ids, Text: "How often is the pump SERVICED?"})
		must(t, err, "SearchText")
		if len(hits) == 0 || hits[0].FileID != manual.ID || hits[0].Chunk != 1 || hits[0].Page != 2 {
			t.Fatalf("best hit %+v, want chunk 1 of manual.txt on page 2", hits)
		}
		wantScores(t, "SearchText", hits)
		for _, h := range hits {
			if h.FileID == hidden.ID {
				t.Errorf("a file outside the query's ids was searched: %+v", h)
			}
		}
		if len(hits) != 3 {
			t.Errorf("hits %q, want the 3 chunks that mention the pump or servicing", hitTexts(hits))
		}
		// Stemming: "services" finds "serviced" and "servicing".
		hits, err = s.SearchText(ctx, file.Query{FileIDs: ids, Text: "services"})
		must(t, err, "SearchText")
		if d := cmp.Diff([]string{"The pump must be serviced every 500 hours; servicing the pump takes an hour."}, hitTexts(hits)); d != "" {
			t.Errorf("stemmed search (-want +got):\n%s", d)
		}

		capped, err := s.SearchText(ctx, file.Query{FileIDs: ids, Text: "pump", PerFile: 1})
		must(t, err, "SearchText")
		if len(capped) != 2 || capped[0].FileID == capped[1].FileID {
			t.Errorf("PerFile 1: %+v, want one hit from each file", capped)
		}
		limited, err := s.SearchText(ctx, file.Query{FileIDs: ids, Text: "pump", Limit: 2})
		must(t, err, "SearchText")
		if len(limited) != 2 {
			t.Errorf("Limit 2: %d hits", len(limited))
		}

		// Whatever a model writes is a query, never a syntax error.
		for _, q := range []string{
			`"unbalanced`, `pump AND`, `NEAR(pump service)`, `-pump`, `pump*`, `title:pump`, `'); DROP TABLE files; --`,
			`pump & | ! <-> :*`, `^pump`, `{pump}`, `pump OR`, `(`, "   ", "", "日本語のポンプ", "😀",
		} {
			hs, err := s.SearchText(ctx, file.Query{FileIDs: ids, Text: q})
			if err != nil {
				t.Errorf("SearchText(%q): %v", q, err)
			}
			if strings.Contains(strings.ToLower(q), "pump") && len(hs) == 0 {
				t.Errorf("SearchText(%q) found nothing; want the pump chunks", q)
			}
		}
		none, err := s.SearchText(ctx, file.Query{FileIDs: nil, Text: "pump"})
		must(t, err, "SearchText")
		if none == nil || len(none) != 0 {
			t.Errorf("SearchText of no files = %#v, want an empty list", none)
		}
	}},
	{"SearchTextCommonWord", func(t *testing.T, s store.Store) {
		// A word in most of the database's chunks still says which of them
		// are about it most: such hits are ranked and scored, not scored 0.
		ctx := t.Context()
		u := createUser(t, s, "common@example.com")
		f := readyFile(t, s, u.ID, "gdpr.txt", text(
			"Personal data means any information relating to a person.",
			"Data protection by design: personal data, data minimisation, data accuracy.",
			"The controller keeps records of data processing.",
			"Data subjects may ask for their data.",
		)...)
		hits, err := s.SearchText(ctx, file.Query{FileIDs: []string{f.ID}, Text: "data"})
		must(t, err, "SearchText")
		if len(hits) != 4 || hits[0].Chunk != 1 {
			t.Fatalf("hits %q; want all 4 chunks, the one that says data most first", hitTexts(hits))
		}
		wantScores(t, "SearchText of a common word", hits)
		for i, h := range hits {
			if h.Score < 0.05 {
				t.Errorf("hit %d (%q) scores %.4f; want a relevance that says it holds the word", i, h.Text, h.Score)
			}
		}
	}},
	{"SearchTextReferenceNumbers", func(t *testing.T, s store.Store) {
		// Every engine cuts text at the marks between digits, as a query is
		// cut: a regulation's number or an article's finds its passage
		// whether it is asked for as written or in another form.
		ctx := t.Context()
		u := createUser(t, s, "refs@example.com")
		f := readyFile(t, s, u.ID, "gdpr.txt", text(
			"Regulation (EU) 2016/679 applies from 25 May 2018.",
			"Processing is lawful only if Article 6.1(a) to (f) applies.",
			"Fines reach EUR 20,000,000 under version 1.2.3 of the rules.",
			"Nothing numbered here.",
		)...)
		for q, want := range map[string]string{
			"2016/679":        "Regulation (EU) 2016/679 applies from 25 May 2018.",
			"Regulation 2016": "Regulation (EU) 2016/679 applies from 25 May 2018.",
			"6.1":             "Processing is lawful only if Article 6.1(a) to (f) applies.",
			"20,000,000":      "Fines reach EUR 20,000,000 under version 1.2.3 of the rules.",
			"1.2.3":           "Fines reach EUR 20,000,000 under version 1.2.3 of the rules.",
		} {
			hits, err := s.SearchText(ctx, file.Query{FileIDs: []string{f.ID}, Text: q})
			must(t, err, "SearchText")
			if len(hits) == 0 || hits[0].Text != want {
				t.Errorf("SearchText(%q): %q; want %q first", q, hitTexts(hits), want)
			}
		}
	}},
	{"SearchTextBesideALargerFile", func(t *testing.T, s store.Store) {
		// Another user's file, stored first and larger than what one ranking
		// reads, holds every word of the query in every chunk: the search of
		// Ann's file, a third of all chunks, still finds hers.
		ctx := t.Context()
		bob := createUser(t, s, "bob@example.com")
		ann := createUser(t, s, "ann@example.com")
		many := func(n int, who string) []file.Chunk {
			cs := make([]file.Chunk, n)
			for i := range cs {
				cs[i] = file.Chunk{Text: fmt.Sprintf("%s: article %d of the regulation names the authority.", who, i)}
			}
			return cs
		}
		readyFile(t, s, bob.ID, "bob.txt", many(5100, "Bob")...)
		hers := readyFile(t, s, ann.ID, "ann.txt", many(2700, "Ann")...)
		for _, q := range []string{"regulation article authority", "article", "authority"} {
			hits, err := s.SearchText(ctx, file.Query{FileIDs: []string{hers.ID}, Text: q})
			must(t, err, "SearchText")
			if len(hits) != 10 {
				t.Errorf("%q: %d hits, want 10 of Ann's file", q, len(hits))
			}
			for _, h := range hits {
				if h.FileID != hers.ID {
					t.Errorf("%q: a hit of another file: %+v", q, h)
				}
			}
		}
	}},
	{"SearchVector", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "files@example.com")
		vecChunk := func(tx string, v ...float32) file.Chunk { return file.Chunk{Text: tx, Embedding: v} }
		a := readyFile(t, s, u.ID, "a.txt",
			vecChunk("east", 1, 0, 0),
			vecChunk("north-east", 1, 1, 0),
			vecChunk("west", -1, 0, 0),
			file.Chunk{Text: "no vector"},
			vecChunk("other model", 1, 0, 0, 0),
		)
		b := readyFile(t, s, u.ID, "b.txt", vecChunk("almost east", 0.9, 0.1, 0), vecChunk("up", 0, 0, 1))
		c := readyFile(t, s, u.ID, "c.txt", vecChunk("exactly east, but not searched", 2, 0, 0))
		_ = c
		ids := []string{a.ID, b.ID}
		hits, err := s.SearchVector(ctx, file.Query{FileIDs: ids}, []float32{3, 0, 0})
		must(t, err, "SearchVector")
		if d := cmp.Diff([]string{"east", "almost east", "north-east", "up", "west"}, hitTexts(hits)); d != "" {
			t.Errorf("SearchVector order (-want +got):\n%s", d)
		}
		if len(hits) > 0 && (hits[0].Score < 0.999 || hits[0].Chunk != 0 || hits[0].Page != 1 || hits[0].FileID != a.ID) {
			t.Errorf("best hit %+v, want chunk 0 of a.txt, page 1, score 1", hits[0])
		}
		for i, h := range hits {
			if h.Score < 0 || h.Score > 1 || (i > 0 && h.Score > hits[i-1].Score) {
				t.Errorf("hit %d scores %v", i, h.Score)
			}
		}
		if len(hits) == 5 && hits[4].Score != 0 {
			t.Errorf("the opposite vector scores %v, want 0 (clipped)", hits[4].Score)
		}
		capped, err := s.SearchVector(ctx, file.Query{FileIDs: ids, PerFile: 1, Limit: 10}, []float32{0, 0, 1})
		must(t, err, "SearchVector")
		if d := cmp.Diff([]string{"up", "east"}, hitTexts(capped)); d != "" {
			t.Errorf("PerFile 1 (-want +got):\n%s", d)
		}
		limited, err := s.SearchVector(ctx, file.Query{FileIDs: ids, Limit: 2}, []float32{1, 0, 0})
		must(t, err, "SearchVector")
		if len(limited) != 2 {
			t.Errorf("Limit 2: %d hits", len(limited))
		}
	}},
}
