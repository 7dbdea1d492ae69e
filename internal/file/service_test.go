package file_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
	"github.com/relay-ai/relay/internal/file/filetest"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/postgres"
	"github.com/relay-ai/relay/internal/store/postgres/pgtest"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// bundle is what a test of the service works with.
type bundle struct {
	store store.Store
	path  string
	// pgURL is the Postgres database with the test's schema ("" on SQLite).
	pgURL string
	svc   *file.Service
	owner string
}

// setup opens a SQLite store with one user and a service over it with opts
// (Store filled in), running until the test ends.
func setup(t *testing.T, opts file.Options) *bundle {
	return setupOn(t, "sqlite", opts)
}

// engines are the engines to run a test on: SQLite, and Postgres when
// TEST_POSTGRES_URL is set.
func engines() []string {
	if os.Getenv("TEST_POSTGRES_URL") != "" {
		return []string{"sqlite", "postgres"}
	}
	return []string{"sqlite"}
}

// setupOn is setup on the named engine; Postgres gets a schema of its own,
// dropped when the test ends.
func setupOn(t *testing.T, engine string, opts file.Options) *bundle {
	t.Helper()
	b := storeOn(t, engine)
	opts.Store = b.store.(file.Storage)
	b.svc = start(t, opts)
	return b
}

// storeOn opens the named engine's store with one user, and no service
// ingesting.
func storeOn(t *testing.T, engine string) *bundle {
	t.Helper()
	var (
		st   *store.DB
		err  error
		path string
	)
	var pgURL string
	if engine == "postgres" {
		pgURL = pgSchema(t, os.Getenv("TEST_POSTGRES_URL"))
		st, err = postgres.Open(t.Context(), pgURL, postgres.Options{})
	} else {
		path = filepath.Join(t.TempDir(), "relay.db")
		st, err = sqlite.Open(t.Context(), path)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u := &auth.User{ID: auth.NewUserID(), Email: "ann@example.com", Role: auth.RoleUser}
	if err := st.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return &bundle{store: st, path: path, pgURL: pgURL, owner: u.ID}
}

// pgSchema returns a URL of a fresh Postgres schema, dropped when t ends.
func pgSchema(t *testing.T, base string) string { return pgtest.Schema(t, base, "file_test") }

// start runs a service until the test ends, and checks that Run returns.
func start(t *testing.T, opts file.Options) *file.Service {
	t.Helper()
	svc := file.NewService(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return after its context ended")
		}
	})
	return svc
}

func (b *bundle) upload(t *testing.T, name string, data []byte) *file.File {
	t.Helper()
	f, err := b.svc.Upload(t.Context(), b.owner, name, bytes.NewReader(data), 0)
	if err != nil {
		t.Fatalf("Upload %s: %v", name, err)
	}
	return f
}

// wait polls until the file is ready or failed.
func (b *bundle) wait(t *testing.T, id string) *file.File {
	t.Helper()
	return b.waitWithin(t, 20*time.Second, b.owner, id)
}

// waitWithin waits until owner's file id is ready or failed, at most d.
func (b *bundle) waitWithin(t *testing.T, d time.Duration, owner, id string) *file.File {
	t.Helper()
	var f *file.File
	poll.Until(t, d, "end of ingestion of file "+id, func() bool {
		var err error
		if f, err = b.svc.Get(t.Context(), owner, id); err != nil {
			t.Fatalf("Get: %v", err)
		}
		return f.Status == file.Ready || f.Status == file.Failed
	})
	return f
}

func texts(hs []file.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Text
	}
	return out
}

func TestIngestPDFAndDOCX(t *testing.T) {
	b := setup(t, file.Options{})
	pdf := b.upload(t, "report.pdf", extracttest.PDF(
		long("Quarterly report. Revenue grew in every region."),
		long("Safety. The compressor must be inspected every 400 operating hours by a certified technician."),
		long("Appendix. Contact details of the regional offices."),
	))
	docx := b.upload(t, "handbook.docx", extracttest.DOCX(
		long("Welcome to the company handbook."),
		long("Holidays. Every employee has 25 days of paid leave a year."),
	))
	if pdf.Status != file.Pending || pdf.MIMEType != "application/pdf" || pdf.Size == 0 {
		t.Errorf("uploaded PDF = %+v, want pending application/pdf with its size", pdf)
	}
	for _, f := range []*file.File{pdf, docx} {
		got := b.wait(t, f.ID)
		if got.Status != file.Ready || got.Progress != 100 || got.Chunks == 0 || got.Error != "" {
			t.Errorf("%s ended %+v, want ready at 100%% with chunks", f.Name, got)
		}
	}
	ids := []string{pdf.ID, docx.ID}
	hits, err := b.svc.Search(t.Context(), file.Query{FileIDs: ids, Text: "how often is the compressor inspected?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].FileName != "report.pdf" || hits[0].Page != 2 || !strings.Contains(hits[0].Text, "400 operating hours") {
		t.Fatalf("best hit %+v, want report.pdf page 2 with the inspection interval", hits)
	}
	hits, err = b.svc.Search(t.Context(), file.Query{FileIDs: ids, Text: "paid leave days"})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].FileName != "handbook.docx" || hits[0].Page != 2 {
		t.Fatalf("best hit %+v, want handbook.docx page 2", hits)
	}
}

// A question answered only by a DOCX's footnote finds the passage that cites
// it, note and sentence together, and the header's identifier with it.
func TestDOCXFootnoteSearchable(t *testing.T) {
	b := setup(t, file.Options{})
	const ns = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	doc := `<w:document ` + ns + `><w:body><w:p><w:r><w:t>Article 3 applies to every credit institution.</w:t></w:r>` +
		`<w:r><w:footnoteReference w:id="1"/></w:r></w:p><w:p><w:r><w:t>` + long("Article 4. Reporting is due each quarter.") + `</w:t></w:r></w:p></w:body></w:document>`
	f := b.wait(t, b.upload(t, "guidelines.docx", extracttest.DOCXWithParts(doc, map[string]string{
		"footnotes.xml": `<w:footnotes ` + ns + `><w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>` +
			`<w:footnote w:id="1"><w:p><w:r><w:t>Branches of third-country undertakings are excluded.</w:t></w:r></w:p></w:footnote></w:footnotes>`,
		"header1.xml": `<w:hdr ` + ns + `><w:p><w:r><w:t>EBA/GL/2024/17</w:t></w:r></w:p></w:hdr>`,
	})).ID)
	if f.Status != file.Ready {
		t.Fatalf("file %+v, want ready", f)
	}
	hits, err := b.svc.Search(t.Context(), file.Query{FileIDs: []string{f.ID}, Text: "are third-country branches excluded?"})
	if err != nil {
		t.Fatal(err)
	}
	want := "[header: EBA/GL/2024/17]\nArticle 3 applies to every credit institution.[footnote 1: Branches of third-country undertakings are excluded.]"
	if len(hits) == 0 || !strings.HasPrefix(hits[0].Text, want) {
		t.Fatalf("hits %q, want the first to start %q", texts(hits), want)
	}
}

// The passages of the paraphrase test: the answer words its question
// differently, and a distractor shares the question's words.
var (
	answer     = "The vehicle must be serviced regularly, every twelve months, at an authorised garage; bring the car's logbook."
	distractor = "Maintenance fees: prices of the car park, parking costs, fees and charges for the garage depend on the plan."
	refunds    = "Refunds are paid back within 30 days of the request."
	others     = []string{
		"Employees book holidays through the staff portal.",
		"The office is closed on public holidays.",
	}
	question = "How often should the car get maintenance?"
)

// long repeats s to about 1,400 characters: a page or paragraph of that
// length starts a chunk of its own (chunks are 1,500 characters, the last 100
// of one repeated at the start of the next).
func long(s string) string {
	var b strings.Builder
	for b.Len()+len(s)+1 <= 1399 {
		b.WriteString(s + " ")
	}
	b.WriteString(strings.Repeat("-", 1399-b.Len()))
	return b.String()
}

// paraphraseFile is one text file whose paragraphs each make a chunk.
func paraphraseFile() []byte {
	var b strings.Builder
	// A neutral paragraph between the two, so that neither chunk holds the
	// other's words in its overlap.
	for _, p := range append([]string{distractor, refunds, answer}, others...) {
		b.WriteString(long(p))
		b.WriteString("\n")
	}
	return []byte(b.String())
}

// TestHybridFindsParaphrase: with full text only, the passage
// that answers a paraphrased question loses to one that shares its words;
// with embeddings from the fake server, hybrid search ranks it first.
func TestHybridFindsParaphrase(t *testing.T) {
	emb := filetest.StartEmbeddings(t)
	for _, tt := range []struct {
		name     string
		embedder file.Embedder
		wantTop  string
	}{
		{"full text", nil, distractor},
		{"hybrid", &file.OpenAIEmbedder{BaseURL: emb.URL, APIKey: emb.Key, Model: "fake"}, answer},
	} {
		for _, eng := range engines() {
			t.Run(tt.name+" on "+eng, func(t *testing.T) {
				b := setupOn(t, eng, file.Options{Embedder: tt.embedder})
				f := b.wait(t, b.upload(t, "car-guide.txt", paraphraseFile()).ID)
				if f.Status != file.Ready || f.Chunks != 5 {
					t.Fatalf("file = %+v, want ready with 5 chunks", f)
				}
				hits, err := b.svc.Search(t.Context(), file.Query{FileIDs: []string{f.ID}, Text: question, Limit: 3})
				if err != nil {
					t.Fatal(err)
				}
				if len(hits) == 0 || !strings.HasPrefix(hits[0].Text, tt.wantTop) {
					t.Errorf("top hit for %q: %q\nwant %q", question, texts(hits), tt.wantTop)
				}
				for i, h := range hits {
					if h.Score <= 0 || h.Score > 1 || h.FileName != "car-guide.txt" {
						t.Errorf("hit %d = %+v, want a score in (0, 1] and the file's name", i, h)
					}
				}
			})
		}
	}
	if emb.Requests.Load() == 0 {
		t.Errorf("the embeddings server was never asked")
	}
}

func TestBadFiles(t *testing.T) {
	b := setup(t, file.Options{})
	tests := []struct {
		name       string
		data       []byte
		wantStatus file.Status
		wantError  string
		wantNote   string
	}{
		{"empty.txt", nil, file.Ready, "", "the file is empty"},
		{"scan.pdf", extracttest.ImagePDF(2), file.Ready, "", "no text"},
		{"broken.docx", extracttest.CorruptDOCX(), file.Failed, "zip", ""},
	}
	for _, tt := range tests {
		f := b.wait(t, b.upload(t, tt.name, tt.data).ID)
		if f.Status != tt.wantStatus || !strings.Contains(f.Error, tt.wantError) || !strings.Contains(f.Note, tt.wantNote) ||
			(tt.wantError == "") != (f.Error == "") {
			t.Errorf("%s ended %s, error %q, note %q; want %s, error with %q, note with %q",
				tt.name, f.Status, f.Error, f.Note, tt.wantStatus, tt.wantError, tt.wantNote)
		}
	}
}

// A file of a type Relay does not read is refused when it is uploaded, not
// stored to fail when it is ingested.
func TestUploadUnreadableType(t *testing.T) {
	b := setup(t, file.Options{})
	for name, data := range map[string][]byte{
		"program.bin": {0x7f, 'E', 'L', 'F', 0, 1, 2, 3, 0xff, 0xfe, 0, 0},
		"photo.png":   append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...),
	} {
		_, err := b.svc.Upload(t.Context(), b.owner, name, bytes.NewReader(data), 1<<20)
		if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "is not one Relay reads: upload PDF, DOCX") {
			t.Errorf("%s: %v, want it refused for its type", name, err)
		}
	}
	if list, err := b.svc.List(t.Context(), b.owner); err != nil || len(list) != 0 {
		t.Errorf("files after refused uploads: %+v, %v; want none", list, err)
	}
	if n := countParts(t, b.path); n != 0 {
		t.Errorf("%d parts of contents left after refused uploads", n)
	}
}

func TestUploadTooLarge(t *testing.T) {
	b := setup(t, file.Options{})
	_, err := b.svc.Upload(t.Context(), b.owner, "big.txt", io.LimitReader(zeros{}, 3<<20+1), 3<<20)
	if !fault.Is(err, fault.TooLarge) || err.Error() != "the file is over the 3 MB limit (fileConfig.serverFileSizeLimit)" {
		t.Fatalf("Upload over the limit: %v, want fault.TooLarge naming 3 MB and its key", err)
	}
	list, err := b.svc.List(t.Context(), b.owner)
	if err != nil || len(list) != 0 {
		t.Errorf("files after a refused upload: %+v, %v; want none", list, err)
	}
	if n := countParts(t, b.path); n != 0 {
		t.Errorf("%d parts of contents left after a refused upload", n)
	}
	f, err := b.svc.Upload(t.Context(), b.owner, "exact.txt", io.LimitReader(zeros{}, 3<<20), 3<<20)
	if err != nil || f.Size != 3<<20 {
		t.Errorf("Upload of exactly the limit: %+v, %v", f, err)
	}
}

// zeros reads as endless spaces (text, so an accepted one is ingested as such).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func countParts(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM file_parts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCleanName(t *testing.T) {
	for in, want := range map[string]string{
		"report.pdf":                      "report.pdf",
		"../../etc/passwd":                "passwd",
		`C:\Users\ann\Desktop\plan.docx`:  "plan.docx",
		`..\..\secret.txt`:                "secret.txt",
		"dir/":                            "dir",
		"  spaced  name.txt  ":            "spaced  name.txt",
		"bell\a\x00tab\tnew\nline.md":     "belltabnewline.md",
		"":                                "file",
		"..":                              "file",
		"/":                               "file",
		"\x01\x02":                        "file",
		"Rapport «2025» 🚀.pdf":            "Rapport «2025» 🚀.pdf",
		strings.Repeat("é", 200) + ".pdf": strings.Repeat("é", 125) + ".pdf",
	} {
		if got := file.CleanName(in); got != want {
			t.Errorf("CleanName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOwnership(t *testing.T) {
	b := setup(t, file.Options{})
	f := b.upload(t, "mine.txt", []byte("private notes"))
	if _, err := b.svc.Get(t.Context(), "user_other", f.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("Get by another user: %v, want fault.NotFound", err)
	}
	if err := b.svc.Delete(t.Context(), "user_other", false, f.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("Delete by another user: %v, want fault.NotFound", err)
	}
	if err := b.svc.Delete(t.Context(), "user_admin", true, f.ID); err != nil {
		t.Errorf("Delete by an admin: %v", err)
	}
	if _, err := b.svc.Get(t.Context(), b.owner, f.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("Get after Delete: %v, want fault.NotFound", err)
	}
}

// countingEmbedder counts how often each text is embedded.
type countingEmbedder struct {
	mu   sync.Mutex
	seen map[string]int
}

func (c *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([][]float32, len(texts))
	for i, tx := range texts {
		c.seen[tx]++
		out[i] = filetest.Vector(tx)
	}
	return out, nil
}

// TestSeveralProcessesIngestOnce runs three services on one database: each
// file is ingested by one of them, once.
func TestSeveralProcessesIngestOnce(t *testing.T) {
	for _, eng := range engines() {
		t.Run(eng, func(t *testing.T) { ingestOnce(t, eng) })
	}
}

func ingestOnce(t *testing.T, eng string) {
	emb := &countingEmbedder{seen: map[string]int{}}
	b := setupOn(t, eng, file.Options{Embedder: emb, Poll: 20 * time.Millisecond})
	for range 2 {
		start(t, file.Options{Store: b.store, Embedder: emb, Poll: 20 * time.Millisecond})
	}
	var ids []string
	for i := range 12 {
		ids = append(ids, b.upload(t, fmt.Sprintf("f%02d.txt", i), []byte(fmt.Sprintf("document number %d is unique", i))).ID)
	}
	for _, id := range ids {
		if f := b.wait(t, id); f.Status != file.Ready || f.Chunks != 1 {
			t.Errorf("%s = %+v", f.Name, f)
		}
	}
	emb.mu.Lock()
	defer emb.mu.Unlock()
	if len(emb.seen) != 12 {
		t.Errorf("%d texts embedded, want 12", len(emb.seen))
	}
	for tx, n := range emb.seen {
		if n != 1 {
			t.Errorf("%q embedded %d times, want once", tx, n)
		}
	}
}

// TestPendingAtStartup: a file uploaded while no process ingests is taken up
// by the next one that starts.
func TestPendingAtStartup(t *testing.T) {
	b := setup(t, file.Options{})
	idle := file.NewService(file.Options{Store: b.store})
	f, err := idle.Upload(t.Context(), b.owner, "later.md", strings.NewReader("# Later\n\nIngested by whoever runs."), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.wait(t, f.ID); got.Status != file.Ready || got.MIMEType != "text/markdown" {
		t.Errorf("file = %+v, want ready markdown", got)
	}
}

// storeWithUser opens a SQLite store, without a service ingesting, holding
// the user Ann.
func storeWithUser(t *testing.T) (*store.DB, *auth.User) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u := &auth.User{ID: auth.NewUserID(), Email: "ann@example.com", Role: auth.RoleUser}
	if err := st.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return st, u
}

// Waiting counts the uploads no process has ingested yet: the queue's depth.
func TestWaiting(t *testing.T) {
	st, u := storeWithUser(t)
	idle := file.NewService(file.Options{Store: st})
	for _, name := range []string{"a.md", "b.md"} {
		if _, err := idle.Upload(t.Context(), u.ID, name, strings.NewReader("# Notes\n\nSome text."), 0); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := idle.Waiting(t.Context()); err != nil || n != 2 {
		t.Fatalf("Waiting before ingestion = %d, %v; want 2", n, err)
	}
	svc := start(t, file.Options{Store: st})
	poll.Until(t, 20*time.Second, "the queue to empty", func() bool {
		n, err := svc.Waiting(t.Context())
		return err == nil && n == 0
	})
}

func TestEmbeddingFailure(t *testing.T) {
	emb := filetest.StartEmbeddings(t)
	b := setup(t, file.Options{Embedder: &file.OpenAIEmbedder{BaseURL: emb.URL, APIKey: "sk-wrong-key-1234", Model: "fake"}})
	f := b.wait(t, b.upload(t, "a.txt", []byte("some text to embed")).ID)
	if f.Status != file.Failed || !strings.Contains(f.Error, "401") || strings.Contains(f.Error, "sk-wrong-key-1234") {
		t.Errorf("file = %+v, want failed with the 401 and without the key", f)
	}
}

// TestSearchWithoutEmbeddings: a file ingested with embeddings is still found,
// by full text, when the endpoint refuses the query.
func TestSearchWithoutEmbeddings(t *testing.T) {
	emb := filetest.StartEmbeddings(t)
	b := setup(t, file.Options{Embedder: &file.OpenAIEmbedder{BaseURL: emb.URL, APIKey: emb.Key, Model: "fake"}})
	f := b.wait(t, b.upload(t, "a.txt", []byte("the boiler is serviced in October")).ID)
	broken := file.NewService(file.Options{Store: b.store, Embedder: &file.OpenAIEmbedder{BaseURL: emb.URL, APIKey: "wrong", Model: "fake"}})
	hits, err := broken.Search(t.Context(), file.Query{FileIDs: []string{f.ID}, Text: "boiler"})
	if err != nil || len(hits) != 1 || hits[0].FileName != "a.txt" {
		t.Errorf("Search with a refused query embedding: %+v, %v; want the file's chunk by full text", hits, err)
	}
}

// ragServer is a fake LibreChat-compatible RAG API.
type ragServer struct {
	mu       sync.Mutex
	embedded map[string]string // file id → contents
	deleted  []string
	// entered, when set, is told of each /embed, which then waits for hold
	// to close before it stores the file.
	entered chan string
	hold    chan struct{}
}

func startRAG(t *testing.T) (*ragServer, string) {
	return startRAGServer(t, &ragServer{})
}

func startRAGServer(t *testing.T, r *ragServer) (*ragServer, string) {
	r.embedded = map[string]string{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /embed", func(w http.ResponseWriter, req *http.Request) {
		id := req.FormValue("file_id")
		f, _, err := req.FormFile("file")
		if err != nil || id == "" {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		data, _ := io.ReadAll(f)
		if r.entered != nil {
			r.entered <- id
			<-r.hold
		}
		r.mu.Lock()
		r.embedded[id] = string(data)
		r.mu.Unlock()
		fmt.Fprintf(w, `{"status": true, "file_id": %q, "filename": "x", "known_type": true}`, id)
	})
	mux.HandleFunc("POST /query", func(w http.ResponseWriter, req *http.Request) {
		var q struct {
			FileID string `json:"file_id"`
			Query  string `json:"query"`
			K      int    `json:"k"`
		}
		if err := json.NewDecoder(req.Body).Decode(&q); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		text := r.embedded[q.FileID]
		r.mu.Unlock()
		fmt.Fprintf(w, `[[{"page_content": %q, "metadata": {"page": 2, "file_id": %q}}, 0.25]]`, text, q.FileID)
	})
	mux.HandleFunc("DELETE /documents", func(w http.ResponseWriter, req *http.Request) {
		var ids []string
		_ = json.NewDecoder(req.Body).Decode(&ids)
		r.mu.Lock()
		r.deleted = append(r.deleted, ids...)
		for _, id := range ids {
			delete(r.embedded, id)
		}
		r.mu.Unlock()
		w.Write([]byte(`{}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return r, srv.URL
}

func TestRAGAPI(t *testing.T) {
	rag, url := startRAG(t)
	b := setup(t, file.Options{RAG: &file.RAGAPI{URL: url}})
	f := b.wait(t, b.upload(t, "notes.txt", []byte("the answer is 42")).ID)
	if f.Status != file.Ready {
		t.Fatalf("file = %+v, want ready", f)
	}
	hits, err := b.svc.Search(t.Context(), file.Query{FileIDs: []string{f.ID}, Text: "what is the answer?"})
	if err != nil {
		t.Fatal(err)
	}
	want := []file.Hit{{FileID: f.ID, FileName: "notes.txt", Page: 3, Text: "the answer is 42", Score: 0.75}}
	if d := cmp.Diff(want, hits); d != "" {
		t.Errorf("hits (-want +got):\n%s", d)
	}
	if err := b.svc.Delete(t.Context(), b.owner, false, f.ID); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{f.ID}, rag.deleted); d != "" {
		t.Errorf("deleted at the RAG API (-want +got):\n%s", d)
	}
}

// fullOnce is a store whose first write of a file's chunks finds the
// database full.
type fullOnce struct {
	file.Storage
	failed atomic.Bool
}

func (s *fullOnce) AddFileChunks(ctx context.Context, c *file.Claim, chunks []file.Chunk) error {
	if s.failed.CompareAndSwap(false, true) {
		return fault.New(fault.Unavailable, "the database's disk is full: nothing can be stored until space is freed on it")
	}
	return s.Storage.AddFileChunks(ctx, c, chunks)
}

// deletedMidway is a store where the file is deleted just before its
// ingestion stores its chunks.
type deletedMidway struct {
	file.Storage
	once atomic.Bool
}

func (s *deletedMidway) AddFileChunks(ctx context.Context, c *file.Claim, chunks []file.Chunk) error {
	if s.once.CompareAndSwap(false, true) {
		if err := s.Storage.DeleteFile(ctx, c.File.ID); err != nil {
			return err
		}
	}
	return s.Storage.AddFileChunks(ctx, c, chunks)
}

// warnLog keeps the records logged at level Warn and above.
type warnLog struct {
	mu   sync.Mutex
	recs []string // "LEVEL message"
}

func (h *warnLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *warnLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *warnLog) WithGroup(string) slog.Handler            { return h }

func (h *warnLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.mu.Lock()
		h.recs = append(h.recs, r.Level.String()+" "+r.Message)
		h.mu.Unlock()
	}
	return nil
}

func (h *warnLog) records() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.recs)
}

// A file deleted while it is ingested is no error of the server's: the
// ingestion, finding its claim gone as it stores the chunks, stops with a
// warning, and nothing of the file stays. It was once logged as an internal
// error ("ingesting a file") and then written as failed.
func TestFileDeletedWhileIngestedIsNoError(t *testing.T) {
	st, u := storeWithUser(t)
	mid := &deletedMidway{Storage: st}
	logs := &warnLog{}
	svc := file.NewService(file.Options{Store: mid, Poll: 20 * time.Millisecond, Logger: slog.New(logs)})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	f, err := svc.Upload(t.Context(), u.ID, "notes.md", strings.NewReader("# Notes\n\nDeleted midway."), 0)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the ingestion's word on the deleted file", func() bool {
		return len(logs.records()) > 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := svc.Get(t.Context(), u.ID, f.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("Get after the deletion: %v; want not found", err)
	}
	if got, want := logs.records(), []string{"WARN ingestion abandoned"}; !slices.Equal(got, want) {
		t.Errorf("logged %q; want %q", got, want)
	}
}

// A file whose ingestion finds the database unavailable (its disk full) is
// not failed for good: its lease running out, it is ingested again.
func TestIngestionPutOffWhileTheDatabaseIsFull(t *testing.T) {
	st, u := storeWithUser(t)
	full := &fullOnce{Storage: st}
	svc := start(t, file.Options{Store: full, Lease: 200 * time.Millisecond, Poll: 20 * time.Millisecond})
	f, err := svc.Upload(t.Context(), u.ID, "notes.md", strings.NewReader("# Notes\n\nKept after all."), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got *file.File
	poll.Until(t, 10*time.Second, "the end of the file's ingestion", func() bool {
		if got, err = svc.Get(t.Context(), u.ID, f.ID); err != nil {
			t.Fatal(err)
		}
		return got.Status == file.Ready || got.Status == file.Failed
	})
	if !full.failed.Load() || got.Status != file.Ready || got.Chunks == 0 {
		t.Errorf("file after a full database: %+v (a write failed: %v); want ready, ingested again", got, full.failed.Load())
	}
}

// blockingEmbedder says when it is first asked, then waits for the end of
// the ingestion's context.
type blockingEmbedder struct{ asked chan struct{} }

func (e *blockingEmbedder) Embed(ctx context.Context, _ []string) ([][]float32, error) {
	select {
	case e.asked <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// A process that stops while it ingests a file (a `relay files add --wait`
// done with its own files, which has no node for a reaper to give its files
// back) leaves the file pending for the next process, not processing at its
// last progress until the lease runs out.
func TestStoppedIngestionGivesTheFileBack(t *testing.T) {
	for _, eng := range engines() {
		t.Run(eng, func(t *testing.T) {
			b := storeOn(t, eng)
			emb := &blockingEmbedder{asked: make(chan struct{}, 1)}
			cli := file.NewService(file.Options{Store: b.store.(file.Storage), Embedder: emb, Lease: time.Hour, Poll: time.Hour})
			f, err := cli.Upload(t.Context(), b.owner, "notes.txt", strings.NewReader("Article 6(1) applies."), 0)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- cli.Run(ctx) }()
			select {
			case <-emb.asked:
			case <-time.After(10 * time.Second):
				t.Fatal("the file was not claimed by the stopping process")
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			got, err := cli.Get(t.Context(), b.owner, f.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != file.Pending || got.Progress != 0 {
				t.Errorf("file after its process stopped: %s at %d%%; want pending at 0%%", got.Status, got.Progress)
			}
		})
	}
}

// Unready names the files a search leaves out: one not yet ingested; a
// ready file (an empty one is ready at once) and an unknown id are not named.
func TestUnready(t *testing.T) {
	for _, eng := range engines() {
		t.Run(eng, func(t *testing.T) {
			b := storeOn(t, eng)
			idle := file.NewService(file.Options{Store: b.store.(file.Storage)})
			ready, err := idle.Upload(t.Context(), b.owner, "empty.txt", strings.NewReader(""), 0)
			if err != nil {
				t.Fatal(err)
			}
			waiting, err := idle.Upload(t.Context(), b.owner, "later.txt", strings.NewReader("Article 9 applies."), 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := idle.Unready(t.Context(), []string{ready.ID, waiting.ID, "file_nope"})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].ID != waiting.ID || got[0].Status != file.Pending {
				t.Errorf("Unready = %+v, want later.txt, pending", got)
			}
		})
	}
}

// A file's error, which its owner reads, names the embeddings endpoint or
// RAG API without the credentials its URL may carry (user info, query),
// whether the endpoint answers with an error or cannot be reached.
func TestEndpointCredentialsNotInFileErrors(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream down", http.StatusInternalServerError)
	}))
	t.Cleanup(down.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	withSecrets := func(base string) string {
		return strings.Replace(base, "http://", "http://embuser:Pw-S3cret-in-URL@", 1) + "/v1?api-key=Q-S3cret-in-URL"
	}
	noWait := func(context.Context, time.Duration) error { return nil }
	for _, tc := range []struct {
		name string
		opts file.Options
	}{
		{"embeddings answer 500", file.Options{Embedder: &file.OpenAIEmbedder{BaseURL: withSecrets(down.URL), Model: "m", Sleep: noWait}}},
		{"embeddings unreachable", file.Options{Embedder: &file.OpenAIEmbedder{BaseURL: withSecrets(gone.URL), Model: "m", Sleep: noWait}}},
		{"RAG API answers 500", file.Options{RAG: &file.RAGAPI{URL: withSecrets(down.URL), Sleep: noWait}}},
		{"RAG API unreachable", file.Options{RAG: &file.RAGAPI{URL: withSecrets(gone.URL), Sleep: noWait}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, tc.opts)
			f := b.wait(t, b.upload(t, "a.txt", []byte("Article 6(1) applies.")).ID)
			if f.Status != file.Failed || strings.Contains(f.Error, "S3cret-in-URL") || !strings.Contains(f.Error, "127.0.0.1") {
				t.Errorf("file = %s, error %q; want failed, naming the endpoint without its credentials", f.Status, f.Error)
			}
		})
	}
}

// An embeddings request refused by a rate limit or a passing 5xx is tried
// again (after the Retry-After asked for, else a backoff), up to three tries;
// one refused for good (401), or asked to wait over a minute, is not.
func TestEmbedderRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answers   []int // statuses before the endpoint answers, 0 meaning the vectors
		after     string
		wantTries int
		wantWaits []time.Duration
		wantErr   string
	}{
		{name: "rate limited once", answers: []int{429, 0}, after: "2", wantTries: 2, wantWaits: []time.Duration{2 * time.Second}},
		{name: "5xx twice", answers: []int{503, 502, 0}, wantTries: 3, wantWaits: []time.Duration{time.Second, 2 * time.Second}},
		{name: "5xx three times", answers: []int{500, 500, 500, 0}, wantTries: 3, wantWaits: []time.Duration{time.Second, 2 * time.Second}, wantErr: "500"},
		{name: "refused", answers: []int{401, 0}, wantTries: 1, wantErr: "401"},
		{name: "asked to wait an hour", answers: []int{429, 0}, after: "3600", wantTries: 1, wantErr: "429"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emb := filetest.StartEmbeddings(t)
			var tries atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(tries.Add(1)) - 1
				if n < len(tc.answers) && tc.answers[n] != 0 {
					if tc.after != "" {
						w.Header().Set("Retry-After", tc.after)
					}
					http.Error(w, "not now", tc.answers[n])
					return
				}
				emb.Handler().ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			var waits []time.Duration
			e := &file.OpenAIEmbedder{BaseURL: srv.URL + "/v1", APIKey: emb.Key, Model: "m", Sleep: func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			}}
			vecs, err := e.EmbedPatiently(t.Context(), []string{"Article 6(1)", "Article 9"})
			if tc.wantErr == "" && (err != nil || len(vecs) != 2) || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("EmbedPatiently = %d vectors, %v; want error %q", len(vecs), err, tc.wantErr)
			}
			if int(tries.Load()) != tc.wantTries {
				t.Errorf("%d tries, want %d", tries.Load(), tc.wantTries)
			}
			if diff := cmp.Diff(tc.wantWaits, waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			// A search's query is embedded once: it falls back to full
			// text rather than keep someone waiting.
			tries.Store(0)
			waits = nil
			_, err = e.Embed(t.Context(), []string{"Article 6(1)"})
			if n := tries.Load(); n != 1 || len(waits) != 0 || (tc.answers[0] != 0) != (err != nil) {
				t.Errorf("Embed: %d tries, waits %v, err %v; want one try, no wait", n, waits, err)
			}
		})
	}
}

// The RAG API's /embed, part of an ingestion, is tried as the embeddings
// endpoint is (TestEmbedderRetries): again after a rate limit or a passing
// 5xx, up to three tries, after the Retry-After asked for or a backoff; not
// after a 400, nor once the ingestion has stopped. A /query, which someone
// waits for, is sent once.
func TestRAGAPIEmbedRetries(t *testing.T) {
	type rag struct {
		srv            *httptest.Server
		embeds, querys atomic.Int32
	}
	start := func(t *testing.T, answers []int, after string) *rag {
		r := &rag{}
		r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.URL.Path == "/query" {
				r.querys.Add(1)
				http.Error(w, "not now", http.StatusServiceUnavailable)
				return
			}
			n := int(r.embeds.Add(1)) - 1
			if _, _, err := req.FormFile("file"); err != nil || req.FormValue("file_id") == "" {
				http.Error(w, "bad form", http.StatusBadRequest)
				return
			}
			if n < len(answers) && answers[n] != 0 {
				if after != "" {
					w.Header().Set("Retry-After", after)
				}
				http.Error(w, "not now", answers[n])
				return
			}
			fmt.Fprint(w, `{"status": true, "known_type": true}`)
		}))
		t.Cleanup(r.srv.Close)
		return r
	}
	for _, tc := range []struct {
		name      string
		answers   []int // statuses before the API embeds, 0 meaning it does
		after     string
		wantTries int
		wantWaits []time.Duration
		wantErr   string
	}{
		{name: "503 twice", answers: []int{503, 503, 0}, wantTries: 3, wantWaits: []time.Duration{time.Second, 2 * time.Second}},
		{name: "rate limited once", answers: []int{429, 0}, after: "2", wantTries: 2, wantWaits: []time.Duration{2 * time.Second}},
		{name: "5xx three times", answers: []int{502, 500, 503, 0}, wantTries: 3, wantWaits: []time.Duration{time.Second, 2 * time.Second}, wantErr: "503"},
		{name: "refused", answers: []int{400, 0}, wantTries: 1, wantErr: "400"},
		{name: "asked to wait an hour", answers: []int{503, 0}, after: "3600", wantTries: 1, wantErr: "503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, tc.answers, tc.after)
			var waits []time.Duration
			a := &file.RAGAPI{URL: r.srv.URL, Sleep: func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			}}
			err := a.Embed(t.Context(), "file_1", "a.txt", "text/plain", []byte("Article 6(1) applies."))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Embed = %v; want error %q", err, tc.wantErr)
			}
			if n := int(r.embeds.Load()); n != tc.wantTries {
				t.Errorf("%d tries, want %d", n, tc.wantTries)
			}
			if diff := cmp.Diff(tc.wantWaits, waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			waits = nil
			if _, err := a.Query(t.Context(), file.Query{FileIDs: []string{"file_1"}, Text: "q", Limit: 5}); err == nil || r.querys.Load() != 1 || len(waits) != 0 {
				t.Errorf("Query: %d tries, waits %v, err %v; want one try, no wait, the 503", r.querys.Load(), waits, err)
			}
		})
	}

	t.Run("ingestion stopped while waiting", func(t *testing.T) {
		r := start(t, []int{503, 503, 0}, "")
		ctx, cancel := context.WithCancel(t.Context())
		a := &file.RAGAPI{URL: r.srv.URL, Sleep: func(ctx context.Context, _ time.Duration) error {
			cancel()
			return ctx.Err()
		}}
		if err := a.Embed(ctx, "file_1", "a.txt", "text/plain", []byte("x")); err == nil {
			t.Error("Embed succeeded; want the 503 it stopped at")
		}
		if n := r.embeds.Load(); n != 1 {
			t.Errorf("%d tries; want none after the ingestion stopped", n)
		}
	})

	t.Run("a file ingested through two 503s", func(t *testing.T) {
		r := start(t, []int{503, 503, 0}, "")
		noWait := func(context.Context, time.Duration) error { return nil }
		b := setup(t, file.Options{RAG: &file.RAGAPI{URL: r.srv.URL, Sleep: noWait}})
		f := b.wait(t, b.upload(t, "a.txt", []byte("Article 6(1) applies.")).ID)
		if f.Status != file.Ready || r.embeds.Load() != 3 {
			t.Errorf("file = %s (%q) after %d tries; want ready after 3", f.Status, f.Error, r.embeds.Load())
		}
	})
}

// A file deleted while the RAG API embeds it: Delete removes its vectors
// there before the embedding stores them, so the ingestion, finding the file
// gone, removes them again: nothing of a deleted document stays in the RAG
// API.
func TestRAGAPIFileDeletedWhileEmbedded(t *testing.T) {
	rag, url := startRAGServer(t, &ragServer{entered: make(chan string, 1), hold: make(chan struct{})})
	b := setup(t, file.Options{RAG: &file.RAGAPI{URL: url}, Poll: 20 * time.Millisecond})
	f := b.upload(t, "confidential.txt", []byte("Article 6(1) applies to the merger."))
	select {
	case <-rag.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the file was not sent to the RAG API")
	}
	if err := b.svc.Delete(t.Context(), b.owner, false, f.ID); err != nil {
		t.Fatal(err)
	}
	close(rag.hold)
	poll.Until(t, 10*time.Second, "the deleted file's vectors gone from the RAG API", func() bool {
		rag.mu.Lock()
		defer rag.mu.Unlock()
		_, kept := rag.embedded[f.ID]
		return !kept && len(rag.deleted) == 2
	})
}
