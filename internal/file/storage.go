package file

import (
	"context"
	"time"
)

// Chunk is one stored passage of a file.
type Chunk struct {
	// Index is the chunk's place in the file, from 0.
	Index int
	// Page is the page the chunk starts on.
	Page int
	Text string
	// Embedding is the chunk's vector; nil without embeddings.
	Embedding []float32
}

// StoredChunk is a chunk as search reads it back.
type StoredChunk struct {
	// ID is the chunk's row id, unique in the database.
	ID     int64
	FileID string
	Index  int
	Page   int
	Text   string
	// Embedding is the stored vector, float32 little-endian (EncodeVector);
	// nil without one.
	Embedding []byte
}

// Claim is a process's hold on a file it ingests: the file, and the token that
// the process's later writes must show, so that a process whose lease ran out
// (and whose file another process took) can no longer change it.
type Claim struct {
	File  *File
	Token string
}

// Outcome is how an ingestion ended.
type Outcome struct {
	// Status is Ready or Failed.
	Status Status
	// Error says why it failed; Note what to know about a ready file.
	Error, Note string
}

// Storage is what the file service needs from storage: the records of Store
// plus contents, claims, chunks and search.
type Storage interface {
	Store
	// ListFiles returns the files of owner, newest first.
	ListFiles(ctx context.Context, owner string) ([]*File, error)
	// FileUsage returns how many files owner has and the sum of their sizes:
	// what the per-user storage quotas count.
	FileUsage(ctx context.Context, owner string) (files int, bytes int64, err error)
	// CreateFileWithin is CreateFile for an owner whose files b bounds: it
	// counts the owner's files and inserts f as one step, which no other
	// upload of the owner's comes between, and returns an *OverBound, storing
	// nothing, when f would take them past b.
	CreateFileWithin(ctx context.Context, f *File, b Bound) error
	// DeleteFile deletes the file with its contents and chunks, or returns
	// fault.NotFound.
	DeleteFile(ctx context.Context, id string) error

	// PutFilePart stores part seq (from 0) of the contents of the file id, which
	// need not exist yet: contents are written as an upload streams in and the
	// record is created when it is complete.
	PutFilePart(ctx context.Context, id string, seq int, data []byte) error
	// DeleteFileParts deletes the contents of the file id.
	DeleteFileParts(ctx context.Context, id string) error
	// SweepFileParts deletes the parts of uploads that never became a file
	// (cut off by a crash), stored before cutoff, and returns how many.
	SweepFileParts(ctx context.Context, cutoff time.Time) (int, error)
	// FileContents returns the contents of the file id, read part by part into
	// one buffer of sizeHint bytes' capacity.
	FileContents(ctx context.Context, id string, sizeHint int64) ([]byte, error)

	// ClaimFile takes for ingestion the oldest file that is pending, or that is
	// processing with a lease that ended before now, in one atomic step: of
	// several processes claiming at once each file goes to one. The file becomes
	// processing at 0% with its lease until now+lease and its old chunks
	// deleted. ok is false when no file is waiting.
	ClaimFile(ctx context.Context, now time.Time, lease time.Duration) (c *Claim, ok bool, err error)
	// WaitingFiles counts the files ClaimFile would take at now: pending, or
	// processing with a lease that ended before now.
	WaitingFiles(ctx context.Context, now time.Time) (int, error)
	// UpdateFileProgress sets the progress of a claimed file and extends its
	// lease to leaseUntil. A claim that is no longer held is fault.Conflict.
	UpdateFileProgress(ctx context.Context, c *Claim, progress int, leaseUntil time.Time) error
	// AddFileChunks stores chunks of a claimed file. A claim that is no longer
	// held is fault.Conflict.
	AddFileChunks(ctx context.Context, c *Claim, chunks []Chunk) error
	// FinishFile ends the ingestion of a claimed file with its outcome, the
	// number of chunks stored and progress 100. A claim that is no longer held
	// is fault.Conflict.
	FinishFile(ctx context.Context, c *Claim, o Outcome) error
	// ReleaseFile puts a claimed file back to pending, for any process to
	// ingest from the start; a claim no longer held changes nothing.
	ReleaseFile(ctx context.Context, c *Claim) error

	// SearchText returns the chunks of q.FileIDs that best match q.Text by full
	// text, best first, at most q.PerFile per file (when above 0) and q.Limit in
	// all, with scores from 0 to 1. Any text is a valid query.
	SearchText(ctx context.Context, q Query) ([]Hit, error)
	// SearchVector returns the chunks of q.FileIDs nearest to vec by cosine
	// similarity, as SearchText orders and limits them; scores are the
	// similarity clipped to 0–1. Chunks without a vector are left out.
	SearchVector(ctx context.Context, q Query, vec []float32) ([]Hit, error)
	// FileVectors calls fn with the row id, index and stored vector of each
	// chunk of f whose vector has dims dimensions, in index order, provided f is
	// still ready as of f.UpdatedAt, and with nothing otherwise: a file ingested
	// again meanwhile, by any process, never gives a mix of two ingestions.
	FileVectors(ctx context.Context, f *File, dims int, fn func(id int64, idx int, vec []byte)) error
	// ReadChunks returns the chunks with the given row ids, in no particular
	// order, leaving out ids no longer stored.
	ReadChunks(ctx context.Context, ids []int64) ([]StoredChunk, error)
}

// Bound is how many files, and bytes in all, an owner's files may hold (0:
// any): the per-user quotas (docs/config.md "limits").
type Bound struct {
	Files int
	Bytes int64
}

// OverBound is the refusal of a file that would take its owner's files past a
// Bound: past its Files, or else its Bytes.
type OverBound struct {
	Files bool
}

func (e *OverBound) Error() string {
	if e.Files {
		return "the owner's files would be more than their quota allows"
	}
	return "the owner's files would hold more bytes than their quota allows"
}
