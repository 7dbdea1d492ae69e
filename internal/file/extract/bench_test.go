package extract_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/relay-ai/relay/internal/file/extract"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
)

func textBytes(doc *extract.Document) int {
	n := 0
	for _, p := range doc.Pages {
		n += len(p.Text)
	}
	return n
}

func benchText(b *testing.B, mime string, data []byte) {
	b.Helper()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	text := 0
	for b.Loop() {
		doc, err := extract.Text(context.Background(), mime, data, nil)
		if err != nil {
			b.Fatal(err)
		}
		text = textBytes(doc)
	}
	// MB/s counts the file's bytes; text-MB/s the text extracted from them.
	b.ReportMetric(float64(text)*float64(b.N)/b.Elapsed().Seconds()/1e6, "text-MB/s")
}

// BenchmarkTextPDF extracts a 100-page PDF of text (about 300 KB of text).
func BenchmarkTextPDF(b *testing.B) {
	pages := make([]string, 100)
	for i := range pages {
		pages[i] = extracttest.LargeText(i + 1)
	}
	benchText(b, extract.PDF, extracttest.PDF(pages...))
}

// BenchmarkTextPDFObjectStreams is BenchmarkTextPDF with object and
// cross-reference streams.
func BenchmarkTextPDFObjectStreams(b *testing.B) {
	pages := make([]string, 100)
	for i := range pages {
		pages[i] = extracttest.LargeText(i + 1)
	}
	benchText(b, extract.PDF, extracttest.PDFWithObjectStreams(pages...))
}

// BenchmarkTextPlain extracts 10 MB of plain text.
func BenchmarkTextPlain(b *testing.B) {
	var sb strings.Builder
	for i := 1; sb.Len() < 10<<20; i++ {
		sb.WriteString(extracttest.LargeText(i))
		sb.WriteString("\r\n\r\n")
	}
	benchText(b, extract.Plain, []byte(sb.String()))
}

// BenchmarkTextDOCX extracts a 100-page DOCX.
func BenchmarkTextDOCX(b *testing.B) {
	pages := make([]string, 100)
	for i := range pages {
		pages[i] = extracttest.LargeText(i + 1)
	}
	benchText(b, extract.DOCX, extracttest.DOCX(pages...))
}

// BenchmarkChunks cuts 1,000 pages (3 MB of text) at Relay's settings.
func BenchmarkChunks(b *testing.B) {
	pages := make([]extract.Page, 1000)
	size := 0
	for i := range pages {
		pages[i] = extract.Page{Number: i + 1, Text: extracttest.LargeText(i + 1)}
		size += len(pages[i].Text)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		extract.Chunks(pages, 1500, 100)
	}
}

// rssEnv names the PDF a child process of BenchmarkPeakRSS extracts.
const rssEnv = "RELAY_EXTRACT_RSS_PDF"

// BenchmarkPeakRSS measures the peak resident memory of a process that
// reads a 50 MB PDF (LargePDF: about 1,000 pages of text and images) into
// memory and extracts its text. The extraction runs in a child process so
// that nothing else (the benchmark, building the file) counts: the child
// reports its peak after reading the file (rss-file-MB) and after
// extracting (peak-rss-MB).
func BenchmarkPeakRSS(b *testing.B) {
	path := filepath.Join(b.TempDir(), "large.pdf")
	if err := os.WriteFile(path, extracttest.LargePDF(50<<20), 0o600); err != nil {
		b.Fatal(err)
	}
	var before, peak float64
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPeakRSSChild$", "-test.v")
		cmd.Env = append(os.Environ(), rssEnv+"="+path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child: %v\n%s", err, out)
		}
		var pages int
		line := string(out[strings.Index(string(out), "rss:"):])
		if _, err := fmt.Sscanf(line, "rss: file %f MB, peak %f MB, pages %d", &before, &peak, &pages); err != nil {
			b.Fatalf("child output %q: %v", out, err)
		}
	}
	b.ReportMetric(before, "rss-file-MB")
	b.ReportMetric(peak, "peak-rss-MB")
}

// TestPeakRSSChild is BenchmarkPeakRSS's child process; it does nothing
// unless that benchmark runs it.
func TestPeakRSSChild(t *testing.T) {
	path := os.Getenv(rssEnv)
	if path == "" {
		t.Skip("run by BenchmarkPeakRSS")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before := maxRSS(t)
	doc, err := extract.Text(context.Background(), extract.PDF, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	chunks := extract.Chunks(doc.Pages, 1500, 100)
	if len(chunks) == 0 {
		t.Fatal("no chunks")
	}
	fmt.Printf("rss: file %s MB, peak %s MB, pages %d\n", before, maxRSS(t), len(doc.Pages))
}

// maxRSS is the process's peak resident memory so far, in MB: VmHWM from
// /proc/self/status where there is one, since getrusage's figure survives
// exec and would include the parent's peak; else getrusage.
func maxRSS(t *testing.T) string {
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
				kb, err := strconv.ParseFloat(f[1], 64)
				if err == nil {
					return strconv.FormatFloat(kb/1024, 'f', 1, 64)
				}
			}
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return strconv.FormatFloat(float64(ru.Maxrss)/1024, 'f', 1, 64) // kilobytes on Linux
}
