package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/postgres"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// benchFiles measures ingestion throughput (MB of text per second, plain text
// and PDF, full text and with embeddings), the memory of a 50 MB PDF ingest,
// and search latency over many chunks, full text and hybrid, on SQLite and
// Postgres.
func benchFiles() error {
	textMB := flag.Int("text-mb", 20, "size of the plain-text file to ingest, MB")
	pdfMB := flag.Int("pdf-mb", 50, "size of the PDF to ingest, MB")
	chunks := flag.Int("chunks", 100_000, "chunks in the database for the search measurements")
	files := flag.Int("files", 100, "files the chunks belong to")
	scope := flag.Int("scope", 10, "files one narrow search covers (a broad one covers all)")
	dims := flag.Int("dims", 384, "vector dimensions for hybrid search")
	queries := flag.Int("queries", 200, "searches per measurement")
	pgURL := flag.String("postgres", os.Getenv("TEST_POSTGRES_URL"), "Postgres `URL` (default $TEST_POSTGRES_URL; empty: SQLite only)")
	ingest := flag.Bool("ingest", true, "measure ingestion (false: search latency only)")
	flag.Parse()

	dir, err := os.MkdirTemp("", "relay-bench-files-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	engines := []string{"sqlite"}
	if *pgURL != "" {
		engines = append(engines, "postgres")
	}
	// open returns a new store, a function that drops it, and for Postgres
	// the URL of its schema.
	open := func(eng, name string) (*store.DB, func(), string, error) {
		if eng == "sqlite" {
			st, err := sqlite.Open(ctx, filepath.Join(dir, name+".db"))
			return st, func() {}, "", err
		}
		u, drop, err := freshSchema(*pgURL)
		if err != nil {
			return nil, nil, "", err
		}
		st, err := postgres.Open(ctx, u, postgres.Options{})
		return st, drop, u, err
	}

	// Each ingestion runs in a process of its own, so that its peak RSS is
	// its own: the file is read from disk and streamed in, as an upload is.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if *ingest {
		plainPath, pdfPath := filepath.Join(dir, "big.txt"), filepath.Join(dir, "big.pdf")
		if err := os.WriteFile(plainPath, plainText(*textMB<<20), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "writing a %d MB PDF…\n", *pdfMB)
		if err := os.WriteFile(pdfPath, extracttest.LargePDF(*pdfMB<<20), 0o600); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "ingestion\tengine\tfile MB\ttext MB\tseconds\ttext MB/s\tpeak RSS MB\t")
		for _, eng := range engines {
			for _, c := range []struct {
				name, path string
				embed      bool
			}{
				{"plain text, full text", plainPath, false},
				{"plain text, embeddings", plainPath, true},
				{"PDF, full text", pdfPath, false},
			} {
				fmt.Fprintf(os.Stderr, "%s: ingesting %s…\n", eng, c.name)
				args := []string{"files-ingest", "-engine", eng, "-path", c.path, "-dims", strconv.Itoa(*dims), "-dir", dir, "-postgres", *pgURL}
				if c.embed {
					args = append(args, "-embed")
				}
				cmd := exec.Command(self, args...)
				cmd.Stderr = os.Stderr
				out, err := cmd.Output()
				if err != nil {
					return fmt.Errorf("%s, %s: %w", eng, c.name, err)
				}
				var r ingestResult
				if err := json.Unmarshal(out, &r); err != nil {
					return fmt.Errorf("%s, %s: %q: %w", eng, c.name, out, err)
				}
				fi, err := os.Stat(c.path)
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.2f\t%.2f\t%.0f\t\n", c.name, eng, mb(int(fi.Size())), mb(r.TextBytes),
					r.Seconds, mb(r.TextBytes)/r.Seconds, mb(int(r.PeakRSS)))
			}
		}
		tw.Flush()
		fmt.Println()
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "search (%d chunks, %d dims)\tengine\tfiles searched\tp50 ms\tp99 ms\t\n", *chunks, *dims)
	for _, eng := range engines {
		st, drop, schemaURL, err := open(eng, "search")
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: storing %d chunks…\n", eng, *chunks)
		ids, err := seedChunks(ctx, st, *chunks, *files, *dims)
		if err != nil {
			st.Close()
			drop()
			return err
		}
		if eng == "postgres" {
			// The lexeme statistics that full-text search plans with, as
			// autovacuum would gather them within a minute of the inserts.
			if err := analyze(ctx, schemaURL); err != nil {
				st.Close()
				drop()
				return err
			}
		}
		emb := &randomEmbedder{dims: *dims}
		for _, mode := range []string{"full text", "hybrid"} {
			var e file.Embedder
			if mode == "hybrid" {
				e = emb
			}
			svc := file.NewService(file.Options{Store: st, Embedder: e})
			for _, n := range []int{*scope, len(ids)} {
				fmt.Fprintf(os.Stderr, "%s: %s over %d files…\n", eng, mode, n)
				p50, p99, err := searchLatency(ctx, svc, ids[:n], *queries)
				if err != nil {
					st.Close()
					drop()
					return err
				}
				fmt.Fprintf(tw, "%s\t%s\t%d (%d chunks)\t%.1f\t%.1f\t\n", mode, eng, n, n*(*chunks / *files), p50.Seconds()*1000, p99.Seconds()*1000)
			}
		}
		st.Close()
		drop()
	}
	tw.Flush()
	fmt.Println("\ntargets: p99 < 50 ms full text, < 150 ms hybrid; RSS < 300 MB while ingesting a 50 MB PDF")
	return nil
}

func mb(n int) float64 { return float64(n) / (1 << 20) }

// vocabulary is a made-up language of 30,000 words whose frequencies follow
// Zipf's law, as a real one's do: a few words are everywhere, most are rare.
type vocabulary struct {
	words []string
	zipf  *rand.Zipf
}

func newVocabulary(seed uint64) *vocabulary {
	r := rand.New(rand.NewPCG(seed, 1))
	const n = 30_000
	v := &vocabulary{words: make([]string, n), zipf: rand.NewZipf(r, 1.1, 2, n-1)}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for i := range v.words {
		var b strings.Builder
		for range 3 + r.IntN(7) {
			b.WriteByte(letters[r.IntN(len(letters))])
		}
		v.words[i] = b.String()
	}
	return v
}

func (v *vocabulary) word() string { return v.words[v.zipf.Uint64()] }

// text writes about n bytes of sentences.
func (v *vocabulary) text(n int) string {
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteString(v.word())
		if b.Len()%13 == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// query is 3 words that are not among the 100 most common.
func (v *vocabulary) query() string {
	var ws []string
	for len(ws) < 3 {
		if i := v.zipf.Uint64(); i >= 100 {
			ws = append(ws, v.words[i])
		}
	}
	return strings.Join(ws, " ")
}

func plainText(n int) []byte {
	v := newVocabulary(1)
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(v.text(2000))
		b.WriteString("\n\n")
	}
	return b.Bytes()
}

// randomEmbedder gives every text a pseudo-random unit vector: the cost of a
// search does not depend on what the vectors mean.
type randomEmbedder struct {
	dims int
	n    atomic.Uint64
}

func (e *randomEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range texts {
		out[i] = randomVector(e.n.Add(1), e.dims)
	}
	return out, nil
}

func randomVector(seed uint64, dims int) []float32 {
	r := rand.New(rand.NewPCG(seed, 3))
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return file.Normalize(v)
}

// ingestResult is what a files-ingest process reports.
type ingestResult struct {
	Seconds   float64 `json:"seconds"`
	TextBytes int     `json:"text_bytes"`
	PeakRSS   int64   `json:"peak_rss"`
	// BaseRSS is the resident set size just before the upload, UploadRSS
	// the peak once it is stored, before ingestion.
	BaseRSS   int64 `json:"base_rss"`
	UploadRSS int64 `json:"upload_rss"`
	// Status and Error are how the ingestion ended.
	Status file.Status `json:"status"`
	Error  string      `json:"error,omitempty"`
	Note   string      `json:"note,omitempty"`
}

// benchFilesIngest is the process that ingests one file for benchFiles: it
// streams the file at -path into a new store, ingests it, and prints an
// ingestResult as JSON.
func benchFilesIngest() error {
	eng := flag.String("engine", "sqlite", "sqlite or postgres")
	path := flag.String("path", "", "the file to ingest")
	embed := flag.Bool("embed", false, "embed the chunks")
	dims := flag.Int("dims", 384, "vector dimensions")
	dir := flag.String("dir", os.TempDir(), "where the SQLite database goes")
	pgURL := flag.String("postgres", "", "Postgres `URL`")
	bomb := flag.Bool("bomb", false, "a failed ingestion is a result, not an error")
	flag.Parse()
	ctx := context.Background()
	var (
		st  *store.DB
		err error
	)
	if *eng == "postgres" {
		u, drop, ferr := freshSchema(*pgURL)
		if ferr != nil {
			return ferr
		}
		defer drop()
		st, err = postgres.Open(ctx, u, postgres.Options{})
	} else {
		st, err = sqlite.Open(ctx, filepath.Join(*dir, "ingest-"+file.NewID()+".db"))
	}
	if err != nil {
		return err
	}
	defer st.Close()
	u := &auth.User{ID: auth.NewUserID(), Email: "bench@example.com", Role: auth.RoleUser}
	if err := st.CreateUser(ctx, u); err != nil {
		return err
	}
	opts := file.Options{Store: st, Poll: 10 * time.Millisecond}
	if *embed {
		opts.Embedder = &randomEmbedder{dims: *dims}
	}
	svc := file.NewService(opts)
	in, err := os.Open(*path)
	if err != nil {
		return err
	}
	defer in.Close()
	base := rss("VmRSS:")
	start := time.Now()
	f, err := svc.Upload(ctx, u.ID, filepath.Base(*path), in, 1<<30)
	if err != nil {
		return err
	}
	uploaded := rss("VmHWM:")
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(rctx) }()
	defer func() { cancel(); <-done }()
	for {
		got, err := svc.Get(ctx, u.ID, f.ID)
		if err != nil {
			return err
		}
		if got.Status == file.Failed && !*bomb {
			return fmt.Errorf("ingestion failed: %s", got.Error)
		}
		if got.Status == file.Ready || got.Status == file.Failed {
			f = got
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	// The text ingested, about: the chunks without their 100-character overlaps.
	return json.NewEncoder(os.Stdout).Encode(ingestResult{Seconds: took.Seconds(), TextBytes: f.Chunks * (1500 - 100),
		PeakRSS: rss("VmHWM:"), BaseRSS: base, UploadRSS: uploaded, Status: f.Status, Error: f.Error, Note: f.Note})
}

// rss reads a size of this process from /proc/self/status, in bytes (0
// where there is none): field "VmHWM:" is the peak resident set size so far,
// "VmRSS:" the current one.
func rss(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// seedChunks stores n chunks of about 1,500 characters, with vectors, spread
// over files ready files, and returns the files' ids.
func seedChunks(ctx context.Context, st store.Store, n, files, dims int) ([]string, error) {
	u := &auth.User{ID: auth.NewUserID(), Email: "bench@example.com", Role: auth.RoleUser}
	if err := st.CreateUser(ctx, u); err != nil {
		return nil, err
	}
	v := newVocabulary(2)
	var ids []string
	per := n / files
	for i := range files {
		f := &file.File{ID: file.NewID(), Owner: u.ID, Name: fmt.Sprintf("doc%03d.txt", i), MIMEType: "text/plain"}
		if err := st.CreateFile(ctx, f); err != nil {
			return nil, err
		}
		c, ok, err := st.ClaimFile(ctx, time.Now(), time.Hour)
		if err != nil || !ok || c.File.ID != f.ID {
			return nil, fmt.Errorf("claiming %s: %v", f.Name, err)
		}
		for start := 0; start < per; start += 500 {
			batch := make([]file.Chunk, 0, 500)
			for j := start; j < min(start+500, per); j++ {
				batch = append(batch, file.Chunk{Index: j, Page: 1 + j/2, Text: v.text(1500),
					Embedding: randomVector(uint64(i*per+j+1_000_000), dims)})
			}
			if err := st.AddFileChunks(ctx, c, batch); err != nil {
				return nil, err
			}
		}
		if err := st.FinishFile(ctx, c, file.Outcome{Status: file.Ready}); err != nil {
			return nil, err
		}
		ids = append(ids, f.ID)
	}
	return ids, nil
}

// searchLatency runs queries searches (after a few to warm up) over ids and
// returns the median and 99th percentile.
func searchLatency(ctx context.Context, svc *file.Service, ids []string, queries int) (time.Duration, time.Duration, error) {
	v := newVocabulary(2)
	var took []time.Duration
	for i := range queries + 10 {
		q := file.Query{FileIDs: ids, Text: v.query(), Limit: 10}
		start := time.Now()
		if _, err := svc.Search(ctx, q); err != nil {
			return 0, 0, err
		}
		if i >= 10 {
			took = append(took, time.Since(start))
		}
	}
	slices.Sort(took)
	return pct(took, 50), pct(took, 99), nil
}

// analyze runs ANALYZE on the chunks of the Postgres schema at url.
func analyze(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `ANALYZE file_chunks`)
	return err
}
