package file_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/file/extract"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
	"github.com/relay-ai/relay/internal/poll"
)

// waitLong is wait with room for a bomb on a busy machine.
func (b *bundle) waitLong(t *testing.T, owner, id string) *file.File {
	t.Helper()
	return b.waitWithin(t, 2*time.Minute, owner, id)
}

// Bombs uploaded to a service with the default limits end failed, with a
// reason that names the limit's key, and keep no chunks.
func TestBombsEndFailed(t *testing.T) {
	b := setup(t, file.Options{})
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"form-60000.pdf", extracttest.FormBombPDF(60000), "(fileConfig.maxPdfOperations)"},
		{"nested-forms.pdf", extracttest.NestedFormPDF(8, 10), "(fileConfig.maxPdfOperations)"},
		{"stream-cap.pdf", extracttest.StreamBombPDF(100, 8<<20-1024), "the PDF decodes to more than 256 MB, the limit of decoded data per file (fileConfig.maxDecodedMB)"},
		{"gigabyte.docx", docxBomb(), "the DOCX decodes to more than 256 MB, the limit of decoded data per file (fileConfig.maxDecodedMB)"},
		{"pages.pdf", extracttest.PDF(make([]string, 2001)...), "the PDF has more than 2000 pages, the limit of pages per file (fileConfig.maxPages)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := b.waitLong(t, b.owner, b.upload(t, tc.name, tc.data).ID)
			if f.Status != file.Failed || !strings.Contains(f.Error, tc.want) || f.Chunks != 0 {
				t.Errorf("ended %s with %d chunks, error %q; want failed with %q", f.Status, f.Chunks, f.Error, tc.want)
			}
		})
	}
}

var docxBomb = func() []byte { return extracttest.DOCXBomb(1<<30+1<<20, false) }

// Text and chunks over their limits are cut, and the note says so and names
// the key.
func TestTextAndChunksCapped(t *testing.T) {
	b := setup(t, file.Options{Limits: extract.Limits{MaxTextBytes: 64 << 10}, MaxChunks: 5})
	page := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 1000)
	f := b.wait(t, b.upload(t, "long.pdf", extracttest.PDF(page, page)).ID)
	if f.Status != file.Ready || f.Chunks != 5 {
		t.Fatalf("ended %s with %d chunks, want ready with 5", f.Status, f.Chunks)
	}
	for _, want := range []string{"the text was cut at 65536 bytes", "(pages after 2 were not read) (fileConfig.maxTextMB)",
		"only the first 5 chunks of the text are kept, the limit per file (fileConfig.maxChunks)"} {
		if !strings.Contains(f.Note, want) {
			t.Errorf("note %q, want it to say %q", f.Note, want)
		}
	}
}

// A file whose text takes longer than the deadline to read fails saying so.
func TestExtractTimeout(t *testing.T) {
	b := setup(t, file.Options{Limits: extract.Limits{MaxDecodedBytes: 1 << 40}, ExtractTimeout: time.Nanosecond})
	f := b.waitLong(t, b.owner, b.upload(t, "slow.pdf", extracttest.StreamBombPDF(1000, 8<<20-1024)).ID)
	if f.Status != file.Failed || !strings.Contains(f.Error, "reading the text took longer than 1ns, the limit per file (fileConfig.extractTimeout)") {
		t.Errorf("ended %s, error %q", f.Status, f.Error)
	}
}

// Bytes that contradict the type a name declares are refused at upload, and
// nothing is stored.
func TestUploadRefusesMismatchedBytes(t *testing.T) {
	b := setup(t, file.Options{})
	bin := make([]byte, 4096)
	for i := range bin {
		bin[i] = byte(i*131 + i/7)
	}
	for name, data := range map[string][]byte{"notes.txt": bin, "paper.pdf": []byte("plain words"), "report.docx": []byte("plain words")} {
		_, err := b.svc.Upload(t.Context(), b.owner, name, bytes.NewReader(data), 0)
		if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "the file is named") {
			t.Errorf("Upload %s: %v, want it refused as invalid", name, err)
		}
	}
	if n := countParts(t, b.path); n != 0 {
		t.Errorf("%d parts left after refused uploads", n)
	}
	// Binary after the first bytes fails at ingestion.
	late := append([]byte(strings.Repeat("text ", 1000)), bytes.Repeat(bin, 3)...)
	f := b.wait(t, b.upload(t, "late.txt", late).ID)
	if f.Status != file.Failed || !strings.Contains(f.Error, "binary data") {
		t.Errorf("late binary ended %s, error %q", f.Status, f.Error)
	}
}

// While one user's bomb is being ingested, another user's file is ingested
// and their requests are answered: a bomb takes one worker, never the
// process.
func TestOthersServedDuringBomb(t *testing.T) {
	b := setup(t, file.Options{Limits: extract.Limits{MaxDecodedBytes: 1 << 40}, ExtractTimeout: time.Hour})
	bomb := b.upload(t, "bomb.pdf", extracttest.StreamBombPDF(2000, 8<<20-1024))
	poll.Until(t, 30*time.Second, "progress of the bomb", func() bool {
		f, err := b.svc.Get(t.Context(), b.owner, bomb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if f.Status == file.Processing && f.Progress > 0 {
			return true
		}
		if f.Status != file.Pending && f.Status != file.Processing {
			t.Fatalf("the bomb ended %s before the test: %q", f.Status, f.Error)
		}
		return false
	})
	other := &auth.User{ID: auth.NewUserID(), Email: "bob@example.com", Role: auth.RoleUser}
	if err := b.store.CreateUser(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	f, err := b.svc.Upload(ctx, other.ID, "minutes.txt", strings.NewReader("The boiler is serviced every October."), 0)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "another user's file ready during the bomb", func() bool {
		if f, err = b.svc.Get(ctx, other.ID, f.ID); err != nil {
			t.Fatalf("another user's file during the bomb: %v", err)
		}
		if f.Status == file.Failed {
			t.Fatalf("another user's file failed: %s", f.Error)
		}
		return f.Status == file.Ready
	})
	hits, err := b.svc.Search(ctx, file.Query{FileIDs: []string{f.ID}, Text: "boiler"})
	if err != nil || len(hits) != 1 {
		t.Fatalf("search during the bomb: %v, %v", hits, err)
	}
	if g, err := b.svc.Get(ctx, b.owner, bomb.ID); err != nil || g.Status != file.Processing {
		t.Fatalf("the bomb is %v (%v), want it still processing while others are served", g.Status, err)
	}
}
