package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file/extract"
)

// Defaults of Options.
const (
	// DefaultMaxSize is the upload cap when none is configured: 50 MB.
	DefaultMaxSize = 50 << 20
	// DefaultWorkers is how many files one process ingests at once.
	DefaultWorkers = 2
	// DefaultLease is how long a claimed file stays with its process without
	// news before another process may take it again. Progress renews it.
	DefaultLease = 2 * time.Minute
	// DefaultPoll is how often an idle process looks for pending files that
	// another process (or the command line) uploaded.
	DefaultPoll = 2 * time.Second
	// DefaultMaxChunks is how many chunks one file keeps at most.
	DefaultMaxChunks = 10000
	// DefaultExtractTimeout bounds the extraction of one file's text.
	DefaultExtractTimeout = 2 * time.Minute
)

// The cuts of chunking: 1,500 characters overlapping by 100.
const (
	chunkSize    = 1500
	chunkOverlap = 100
)

// partSize is how much of an upload is held in memory and stored at once.
const partSize = 1 << 20

// maxNameBytes bounds a stored file name.
const maxNameBytes = 255

// Options configures a Service. Store is required; nil or zero fields take the
// defaults above.
type Options struct {
	Store Storage
	// Embedder, when set, embeds chunks at ingestion and questions at search,
	// which is then hybrid.
	Embedder Embedder
	// RAG, when set, sends ingestion and search to an external RAG API instead.
	RAG *RAGAPI
	// EmbedBatch is how many chunks one request to the Embedder carries (0: 64).
	EmbedBatch int
	// VectorCacheMB is how much memory, in MB, the vectors of searched files
	// may take (0: DefaultVectorCacheMB; below 0: none, and the store scores
	// vectors at each search). Only hybrid search uses it.
	VectorCacheMB int
	// Limits bounds the extraction of each file; zero fields take the
	// defaults of extract.Limits.
	Limits extract.Limits
	// MaxChunks is how many chunks a file keeps at most (0:
	// DefaultMaxChunks); the rest are dropped and the file's note says so.
	MaxChunks int
	// ExtractTimeout bounds the extraction of a file's text (0:
	// DefaultExtractTimeout); past it the file fails.
	ExtractTimeout time.Duration
	Workers        int
	Lease          time.Duration
	Poll           time.Duration
	Logger         *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Service uploads, ingests and searches files.
type Service struct {
	opts Options
	log  *slog.Logger
	// wake nudges Run when this process uploads a file, so that it need not
	// wait for the next poll.
	wake chan struct{}
	// vectors holds searched files' vectors in memory; nil without an
	// Embedder or with the cache turned off.
	vectors *vectorCache
}

// NewService returns a Service with opts.
func NewService(opts Options) *Service {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.EmbedBatch <= 0 {
		opts.EmbedBatch = 64
	}
	if opts.MaxChunks <= 0 {
		opts.MaxChunks = DefaultMaxChunks
	}
	if opts.ExtractTimeout <= 0 {
		opts.ExtractTimeout = DefaultExtractTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{opts: opts, log: log, wake: make(chan struct{}, 1)}
	if opts.VectorCacheMB == 0 {
		opts.VectorCacheMB = DefaultVectorCacheMB
	}
	if opts.Embedder != nil && opts.RAG == nil && opts.VectorCacheMB > 0 {
		s.vectors = newVectorCache(int64(opts.VectorCacheMB) << 20)
	}
	return s
}

// Waiting counts the files waiting to be ingested by any process: the depth
// of the ingestion queue (relay_ingestion_queue_depth, docs/observability.md).
func (s *Service) Waiting(ctx context.Context) (int, error) {
	return s.opts.Store.WaitingFiles(ctx, s.opts.Now())
}

// Using returns a Service like s — the same options, memory and wake-ups —
// that stores through st: a process ingests through the view of the store
// that names it, so that when it dies its files are given back at once.
func (s *Service) Using(st Storage) *Service {
	c := *s
	c.opts.Store = st
	return &c
}

// CleanName returns the name a file is stored under: the base name of name (a
// client may send a whole path, with / or \), without control characters and
// surrounding spaces, at most 255 bytes, and never empty, "." or "..".
func CleanName(name string) string {
	name = strings.ReplaceAll(name, `\`, "/")
	name = path.Base(strings.TrimRight(name, "/"))
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if len(name) > maxNameBytes {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		cut := maxNameBytes - len(ext)
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + ext
	}
	if name == "" || name == "." || name == ".." || name == "/" {
		return "file"
	}
	return name
}

// Upload stores the contents read from r as a new file of owner, refusing
// more than limit bytes (0: DefaultMaxSize) with fault.TooLarge, and bytes
// that contradict the type the name declares (extract.Check) with
// fault.Invalid, and storing nothing then. The contents go to the database part by part as they arrive;
// the file's record appears, pending, once all of it has. An empty file is
// ready at once, with a note.
func (s *Service) Upload(ctx context.Context, owner, name string, r io.Reader, limit int64) (*File, error) {
	return s.UploadWithin(ctx, owner, name, r, limit, Bound{})
}

// UploadWithin is Upload for an owner whose files b bounds. The bound is
// checked as the file is recorded, together with the files recorded
// meanwhile: uploads of one owner at once cannot pass it together, as each
// would if they were checked only before they stream. Past it the error is
// an *OverBound, and nothing is stored.
func (s *Service) UploadWithin(ctx context.Context, owner, name string, r io.Reader, limit int64, b Bound) (*File, error) {
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	f := &File{ID: NewID(), Owner: owner, Name: CleanName(name)}
	size, head, err := s.storeParts(ctx, f.ID, r, limit)
	if err != nil {
		s.dropParts(ctx, f.ID)
		return nil, err
	}
	if err := extract.Check(f.Name, head); err != nil {
		s.dropParts(ctx, f.ID)
		return nil, err
	}
	f.Size = size
	f.MIMEType = extract.Detect(f.Name, head)
	if size > 0 && s.opts.RAG == nil && !extract.Readable(f.MIMEType) {
		// It would only fail when ingested; a RAG API reads types of its own.
		s.dropParts(ctx, f.ID)
		return nil, fault.New(fault.Invalid, "the file's type (%s) is not one Relay reads: upload %s", f.MIMEType, extract.ReadableKinds)
	}
	if size == 0 {
		f.Status, f.Progress, f.Note = Ready, 100, "the file is empty"
	}
	create := s.opts.Store.CreateFile
	if b != (Bound{}) {
		create = func(ctx context.Context, f *File) error { return s.opts.Store.CreateFileWithin(ctx, f, b) }
	}
	if err := create(ctx, f); err != nil {
		s.dropParts(ctx, f.ID)
		return nil, err
	}
	if f.Status == Pending {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return f, nil
}

// storeParts copies r into the file's parts and returns the size and the first
// bytes (for type detection).
func (s *Service) storeParts(ctx context.Context, id string, r io.Reader, limit int64) (int64, []byte, error) {
	buf := make([]byte, partSize)
	var (
		size int64
		head []byte
	)
	lr := io.LimitReader(r, limit+1)
	for seq := 0; ; seq++ {
		n, err := fill(lr, buf)
		size += int64(n)
		if size > limit {
			return 0, nil, TooLarge(limit)
		}
		var (
			tooBig *http.MaxBytesError
			fe     *fault.Error
		)
		switch {
		case err == nil, errors.Is(err, io.EOF):
		case errors.As(err, &tooBig):
			return 0, nil, TooLarge(limit)
		case errors.As(err, &fe):
			// The reader's own refusal (the HTTP API's of a second file in
			// one request) says what was wrong already.
			return 0, nil, err
		case errors.Is(err, io.ErrUnexpectedEOF):
			// A form without its closing boundary, a body shorter than its
			// Content-Length: what came is not the whole file.
			return 0, nil, fault.Wrap(fault.Invalid, err, "the upload ended before the end of the file: send it again")
		default:
			return 0, nil, fault.Wrap(fault.Invalid, err, "reading the upload: %v", err)
		}
		if n > 0 {
			if seq == 0 {
				head = bytes.Clone(buf[:min(n, 3072)])
			}
			if perr := s.opts.Store.PutFilePart(ctx, id, seq, buf[:n]); perr != nil {
				return 0, nil, fmt.Errorf("storing the upload: %w", perr)
			}
		}
		if err != nil { // EOF: the whole upload is stored
			return size, head, nil
		}
	}
}

// fill reads r into buf until buf is full or r ends, and returns r's error
// as it is: io.EOF at a clean end. (io.ReadFull would turn a short last
// read into io.ErrUnexpectedEOF, which is also what a body cut short says.)
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// dropParts removes what a failed upload stored, even when ctx has ended.
func (s *Service) dropParts(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.opts.Store.DeleteFileParts(ctx, id); err != nil {
		s.log.Warn("removing the contents of a failed upload", slog.String("file_id", id), slog.Any("err", err))
	}
}

// TooLarge is the refusal of a file over limit bytes, the upload cap: it
// names the cap and the key that sets it (docs/config.md "fileConfig"), the
// same for every way a file is refused for its size.
func TooLarge(limit int64) error {
	return fault.New(fault.TooLarge, "the file is over the %s limit (fileConfig.serverFileSizeLimit)", formatSize(limit))
}

// formatSize writes a byte count as people read it, in MB when it is whole.
func formatSize(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d-byte", n)
}

// Get returns the file id if it belongs to userID; any other file, and a
// missing one, is fault.NotFound, so that nobody learns which ids exist.
func (s *Service) Get(ctx context.Context, userID, id string) (*File, error) {
	f, err := s.opts.Store.GetFile(ctx, id)
	if err != nil {
		return nil, err
	}
	if f.Owner != userID {
		return nil, fault.New(fault.NotFound, "file %q not found", id)
	}
	return f, nil
}

// List returns the files of owner, newest first.
func (s *Service) List(ctx context.Context, owner string) ([]*File, error) {
	return s.opts.Store.ListFiles(ctx, owner)
}

// Delete deletes the file id, with its contents and chunks, if it belongs to
// userID or admin is true; any other file is fault.NotFound. With a RAG API
// the file's vectors there are deleted too (a failure there is logged).
func (s *Service) Delete(ctx context.Context, userID string, admin bool, id string) error {
	f, err := s.opts.Store.GetFile(ctx, id)
	if err != nil {
		return err
	}
	if f.Owner != userID && !admin {
		return fault.New(fault.NotFound, "file %q not found", id)
	}
	if err := s.opts.Store.DeleteFile(ctx, id); err != nil {
		return err
	}
	if s.vectors != nil {
		s.vectors.drop(id)
	}
	if s.opts.RAG != nil {
		if err := s.opts.RAG.Delete(ctx, []string{id}); err != nil {
			s.log.Warn("deleting a file's vectors from the RAG API", slog.String("file_id", id), slog.Any("err", err))
		}
	}
	return nil
}

// Run ingests files until ctx ends: pending ones, including those uploaded
// before it started, and those another process left processing past their
// lease. At most Options.Workers files are ingested at once. It returns nil
// when ctx ends, after the ingestions in flight have stopped. It also sweeps
// away, at start and every hour, the stored parts of uploads that a crash cut
// off (older than UploadSweepAge, with no file record).
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.sweep(ctx) })
	slots := make(chan struct{}, s.opts.Workers)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-s.wake:
		}
		// Claim while there are free workers and waiting files.
		for {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
			c, ok, err := s.opts.Store.ClaimFile(ctx, s.opts.Now(), s.opts.Lease)
			if err != nil || !ok {
				<-slots
				if err != nil && ctx.Err() == nil {
					s.log.Warn("claiming a file to ingest", slog.Any("err", err))
				}
				break
			}
			wg.Go(func() {
				defer func() { <-slots }()
				s.ingest(ctx, c)
				// A worker is free: look for more at once.
				select {
				case s.wake <- struct{}{}:
				default:
				}
			})
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(s.opts.Poll)
	}
}

// UploadSweepAge is how old the parts of an upload with no file record must
// be before they are swept: no upload takes that long.
const UploadSweepAge = 6 * time.Hour

// sweep deletes the parts of cut-off uploads now and every hour until ctx ends.
func (s *Service) sweep(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := s.opts.Store.SweepFileParts(ctx, s.opts.Now().Add(-UploadSweepAge)); err != nil && ctx.Err() == nil {
			s.log.Warn("sweeping the parts of unfinished uploads", slog.Any("err", err))
		} else if n > 0 {
			s.log.Info("swept the parts of unfinished uploads", slog.Int("parts", n))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
