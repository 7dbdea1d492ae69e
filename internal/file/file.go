// Package file owns Relay's files: their records (id, owner, name, type and the
// state of their ingestion), uploading them into the database, ingesting them in
// the background (text, chunks, embeddings) and retrieving the passages that
// best answer a question, by full text alone or hybrid with vectors, or through
// an external LibreChat-compatible RAG API.
package file

import (
	"context"
	"time"

	"github.com/relay-ai/relay/internal/ident"
)

// Status is where a file is in its ingestion.
type Status string

// The statuses of a file: pending until a process claims it, processing while
// it is ingested (with Progress), then ready or failed (with Error).
const (
	Pending    Status = "pending"
	Processing Status = "processing"
	Ready      Status = "ready"
	Failed     Status = "failed"
)

// File is the record of one uploaded or imported file.
type File struct {
	// ID is `file_` and 21 URL-safe characters for files Relay creates (NewID).
	ID string `json:"id"`
	// Owner is the id of the user the file belongs to.
	Owner string `json:"owner"`
	// Name is the file's name as uploaded, shown to people and models.
	Name string `json:"name"`
	// MIMEType is the file's media type, e.g. application/pdf.
	MIMEType string `json:"mime_type"`
	// Size is the length of the contents in bytes (0 for a record without contents).
	Size int64 `json:"size"`
	// Status is where the file is in its ingestion; "" is stored as Pending.
	Status Status `json:"status"`
	// Progress is how far ingestion is, from 0 to 100.
	Progress int `json:"progress"`
	// Error says why ingestion failed.
	Error string `json:"error,omitempty"`
	// Note says what a person should know about a file that is ready, e.g. that
	// no text was found in it.
	Note string `json:"note,omitempty"`
	// Chunks is how many passages of the file retrieval searches.
	Chunks int `json:"chunk_count"`
	// CreatedAt is when the record was created, in UTC.
	CreatedAt time.Time `json:"created_at"`
	// UpdatedAt is when the record last changed, in UTC.
	UpdatedAt time.Time `json:"updated_at"`
}

// Store is what files need from storage.
type Store interface {
	// CreateFile inserts f and sets f.CreatedAt (the current time when zero) to
	// its stored form. A taken id is fault.Conflict; a missing owner fault.NotFound.
	CreateFile(ctx context.Context, f *File) error
	// GetFile returns the file with that id, or fault.NotFound.
	GetFile(ctx context.Context, id string) (*File, error)
	// GetFiles returns the files with the given ids in the order of ids. Ids with
	// no file are skipped, and an id listed twice is returned once, at its first
	// place; no ids give an empty list.
	GetFiles(ctx context.Context, ids []string) ([]*File, error)
}

// Query asks for the passages of some files that best answer a text.
type Query struct {
	// FileIDs are the files to search; the caller has checked that the user
	// may read them.
	FileIDs []string
	// Text is what to search for (the model's query or the user's message).
	Text string
	// Limit is how many hits to return at most (0: 10).
	Limit int
	// PerFile is how many hits one file may give at most (0: no limit).
	PerFile int
}

// Hit is one passage that retrieval found, best first in a result.
type Hit struct {
	FileID   string
	FileName string
	// Chunk is the passage's place among the file's chunks, from 0.
	Chunk int
	// Page is the page the passage starts on (1 for files without pages).
	Page int
	Text string
	// Score is the passage's relevance, from 0 to 1, higher is better.
	Score float64
}

// NewID returns a fresh file id: `file_` and 21 URL-safe random characters.
func NewID() string { return ident.New("file_") }
