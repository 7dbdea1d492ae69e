package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"

	"github.com/relay-ai/relay/internal/file/extract/extracttest"
)

// benchBombs ingests files built to exhaust a server, each in a process of
// its own with the default limits, and prints how each ended and how much
// its ingestion grew the process's resident set (the target is under
// 100 MB; docs/config.md, fileConfig).
func benchBombs() error {
	flag.Parse()
	dir, err := os.MkdirTemp("", "relay-bench-bombs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	page := "The quick brown fox jumps over the lazy dog, again and again. "
	bombs := []struct {
		name string
		data func() []byte
	}{
		{"form-drawn-60000.pdf", func() []byte { return extracttest.FormBombPDF(60000) }},
		{"nested-forms-8x10.pdf", func() []byte { return extracttest.NestedFormPDF(8, 10) }},
		{"pages-at-stream-cap.pdf", func() []byte { return extracttest.StreamBombPDF(100, 8<<20-1024) }},
		{"document-1GB.docx", func() []byte { return extracttest.DOCXBomb(1<<30+1<<20, false) }},
		{"document-1GB-lying.docx", func() []byte { return extracttest.DOCXBomb(1<<30+1<<20, true) }},
		{"pages-2001.pdf", func() []byte { return extracttest.PDF(make([]string, 2001)...) }},
		{"text-40MB.pdf", func() []byte { return extracttest.PDF(repeatPages(page, 400, 100_000)...) }},
		{"text-50MB.txt", func() []byte { return []byte(repeatPages(page+"\n", 1, 50<<20)[0]) }},
		{"page-50MB.html", func() []byte {
			return []byte("<!DOCTYPE html><html><body>" + repeatPages("<p>"+page+"</p>\n", 1, 50<<20-64)[0] + "</body></html>")
		}},
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "bomb\tfile KB\tstatus\tseconds\tbase RSS MB\tafter upload MB\tpeak RSS MB\tgrowth MB\treason or note")
	for _, b := range bombs {
		path := filepath.Join(dir, b.name)
		data := b.data()
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "ingesting %s…\n", b.name)
		cmd := exec.Command(self, "files-ingest", "-bomb", "-path", path, "-dir", dir)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		var r ingestResult
		if err := json.Unmarshal(out, &r); err != nil {
			return fmt.Errorf("%s: %q: %w", b.name, out, err)
		}
		reason := r.Error
		if reason == "" {
			reason = r.Note
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.2f\t%.0f\t%.0f\t%.0f\t%.0f\t%s\n", b.name, len(data)>>10, r.Status, r.Seconds,
			mb(int(r.BaseRSS)), mb(int(r.UploadRSS)), mb(int(r.PeakRSS)), mb(int(r.PeakRSS-r.BaseRSS)), reason)
	}
	tw.Flush()
	fmt.Println("\ntarget: growth < 100 MB for every bomb")
	return nil
}

// repeatPages is n pages of text repeated to about size bytes each.
func repeatPages(text string, n, size int) []string {
	p := make([]byte, 0, size)
	for len(p)+len(text) <= size {
		p = append(p, text...)
	}
	pages := make([]string, n)
	for i := range pages {
		pages[i] = string(p)
	}
	return pages
}
