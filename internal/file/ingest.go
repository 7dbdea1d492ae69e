package file

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file/extract"
)

// progressEvery is the most often progress is written to the database.
const progressEvery = 500 * time.Millisecond

// storeBatch is how many chunks one transaction stores.
const storeBatch = 500

// limitKeys names the fileConfig key of each extraction limit
// (docs/config.md).
var limitKeys = map[extract.Limit]string{
	extract.LimitDecoded:    "maxDecodedMB",
	extract.LimitPages:      "maxPages",
	extract.LimitOperations: "maxPdfOperations",
}

// ingestError is a reason an ingestion failed that the file's owner may read.
type ingestError struct{ reason string }

func (e *ingestError) Error() string { return e.reason }

func failWith(format string, args ...any) error {
	return &ingestError{fmt.Sprintf(format, args...)}
}

// ingest takes a claimed file to ready or failed. When ctx ends first, or the
// store is unavailable, the file is left processing: its lease runs out and a
// process takes it again.
func (s *Service) ingest(ctx context.Context, c *Claim) {
	log := s.log.With(slog.String("file_id", c.File.ID))
	start := time.Now()
	if s.vectors != nil {
		// The old chunks are gone; so is any use of their vectors.
		defer s.vectors.drop(c.File.ID)
		s.vectors.drop(c.File.ID)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := s.track(ctx, cancel, c)
	o, err := s.process(ctx, c, p)
	p.stop()
	var ie *ingestError
	switch {
	case ctx.Err() == nil && fault.Is(err, fault.Conflict):
		// Storing the chunks found the claim lost (the file deleted, or
		// taken by another process): not a failure of the ingestion, and
		// nothing is left to finish.
		log.Warn("ingestion abandoned", slog.Any("err", err))
		s.forgetDeleted(ctx, c)
		return
	case ctx.Err() != nil:
		if cause := context.Cause(ctx); fault.Is(cause, fault.Conflict) {
			log.Warn("ingestion abandoned", slog.Any("err", cause))
			s.forgetDeleted(ctx, c)
			return
		}
		// This process stops (a `relay files add --wait` whose own files are
		// done, which may hold another user's file, or a server shutting
		// down): the file goes back to pending now rather than sitting at
		// its last progress until its lease runs out (docs/api.md "Files").
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer rcancel()
		if err := s.opts.Store.ReleaseFile(rctx, c); err != nil {
			log.Warn("giving back a file whose ingestion stopped; it is taken up again once its lease ends", slog.Any("err", err))
			return
		}
		log.Info("ingestion stopped with this process; the file is pending again, for the next one")
		return
	case errors.As(err, &ie):
		o = Outcome{Status: Failed, Error: ie.reason}
	case fault.Is(err, fault.Unavailable):
		// The database could not take the work now (its disk full, say):
		// the file is left processing, and its lease running out has it
		// ingested again, rather than failed for good.
		log.Warn("ingestion put off: the file is taken up again once its lease ends", slog.Any("err", err))
		return
	case err != nil:
		log.Error("ingesting a file", slog.Any("err", err))
		o = Outcome{Status: Failed, Error: "internal error while ingesting the file; the server log has the details"}
	}
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer fcancel()
	if err := s.opts.Store.FinishFile(fctx, c, o); err != nil {
		log.Warn("finishing the ingestion of a file", slog.Any("err", err))
		if fault.Is(err, fault.Conflict) {
			s.forgetDeleted(ctx, c)
		}
		return
	}
	log.Info("file ingested", slog.String("status", string(o.Status)), slog.Int("chunks", c.File.Chunks),
		slog.Int64("bytes", c.File.Size), slog.Duration("duration", time.Since(start)))
}

// forgetDeleted removes from the RAG API, if there is one, what an ingestion
// that lost its claim may have stored there, when the claim was lost because
// the file was deleted: Delete removed the file's vectors before the
// ingestion wrote them, and nothing of a deleted document may stay behind.
// A file still there was taken by another process, whose vectors they are.
func (s *Service) forgetDeleted(ctx context.Context, c *Claim) {
	if s.opts.RAG == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := s.opts.Store.GetFile(ctx, c.File.ID); !fault.Is(err, fault.NotFound) {
		return
	}
	if err := s.opts.RAG.Delete(ctx, []string{c.File.ID}); err != nil {
		s.log.Warn("deleting a deleted file's vectors from the RAG API", slog.String("file_id", c.File.ID), slog.Any("err", err))
	}
}

// process does the work of an ingestion and returns how it ended; an
// ingestError is a failure to tell the owner, any other error an internal one.
func (s *Service) process(ctx context.Context, c *Claim, p *progress) (Outcome, error) {
	f := c.File
	data, err := s.opts.Store.FileContents(ctx, f.ID, f.Size)
	if err != nil {
		return Outcome{}, err
	}
	if len(data) == 0 {
		return Outcome{Status: Ready, Note: "the file is empty"}, nil
	}
	if s.opts.RAG != nil {
		p.set(10)
		if err := s.opts.RAG.Embed(ctx, f.ID, f.Name, f.MIMEType, data); err != nil {
			return Outcome{}, failWith("the RAG API refused the file: %v", err)
		}
		return Outcome{Status: Ready}, nil
	}
	ectx, ecancel := context.WithTimeout(ctx, s.opts.ExtractTimeout)
	doc, err := extract.TextWithin(ectx, f.MIMEType, data, s.opts.Limits, func(done float64) { p.set(int(50 * done)) })
	ecancel()
	data = nil // the text is all that is needed from here on
	var le *extract.LimitError
	switch {
	case errors.Is(err, extract.ErrUnsupported):
		return Outcome{}, failWith("unsupported type: %s", f.MIMEType)
	case ctx.Err() != nil:
		return Outcome{}, ctx.Err()
	case err != nil && errors.Is(ectx.Err(), context.DeadlineExceeded):
		return Outcome{}, failWith("reading the text took longer than %s, the limit per file (fileConfig.extractTimeout)", s.opts.ExtractTimeout)
	case errors.As(err, &le):
		return Outcome{}, failWith("%v (fileConfig.%s)", err, limitKeys[le.Limit])
	case err != nil:
		return Outcome{}, failWith("%v", err)
	}
	if doc.Cut {
		doc.Note += " (fileConfig.maxTextMB)"
	}
	chunks := extract.Chunks(doc.Pages, chunkSize, chunkOverlap)
	doc.Pages = nil
	if len(chunks) > s.opts.MaxChunks {
		chunks = chunks[:s.opts.MaxChunks:s.opts.MaxChunks]
		more := fmt.Sprintf("only the first %d chunks of the text are kept, the limit per file (fileConfig.maxChunks)", s.opts.MaxChunks)
		if doc.Note != "" {
			more = doc.Note + "; " + more
		}
		doc.Note = more
	}
	p.set(50)
	if len(chunks) == 0 {
		note := doc.Note
		if note == "" {
			note = "no text was found in the file"
		}
		return Outcome{Status: Ready, Note: note}, nil
	}
	stored := make([]Chunk, len(chunks))
	for i, ch := range chunks {
		stored[i] = Chunk{Index: ch.Index, Page: ch.Page, Text: ch.Text}
	}
	chunks = nil
	if e := s.opts.Embedder; e != nil {
		embed := e.Embed
		if p, ok := e.(patientEmbedder); ok {
			embed = p.EmbedPatiently
		}
		for start := 0; start < len(stored); start += s.opts.EmbedBatch {
			batch := stored[start:min(start+s.opts.EmbedBatch, len(stored))]
			texts := make([]string, len(batch))
			for i, ch := range batch {
				texts[i] = ch.Text
			}
			vecs, err := embed(ctx, texts)
			if err != nil {
				if ctx.Err() != nil {
					return Outcome{}, ctx.Err()
				}
				return Outcome{}, failWith("embedding the text: %v", err)
			}
			for i := range batch {
				batch[i].Embedding = vecs[i]
			}
			p.set(50 + 40*(start+len(batch))/len(stored))
		}
	}
	base := p.get()
	for start := 0; start < len(stored); start += storeBatch {
		end := min(start+storeBatch, len(stored))
		if err := s.opts.Store.AddFileChunks(ctx, c, stored[start:end]); err != nil {
			if fault.Is(err, fault.Conflict) {
				return Outcome{}, abandon(ctx, err)
			}
			return Outcome{}, err
		}
		p.set(base + (99-base)*end/len(stored))
	}
	return Outcome{Status: Ready, Note: doc.Note}, nil
}

// abandon returns err, the ctx error when ctx ended meanwhile.
func abandon(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// progress is the percentage an ingestion has reached. Work sets it as often
// as it likes; a ticker writes it at most every progressEvery when it changed,
// and renews the claim's lease well before it runs out even when it did not.
type progress struct {
	pct  atomic.Int64
	done chan struct{}
	wg   chan struct{}
}

func (p *progress) set(pct int) {
	for {
		old := p.pct.Load()
		if int64(pct) <= old || p.pct.CompareAndSwap(old, int64(min(pct, 99))) {
			return
		}
	}
}

func (p *progress) get() int { return int(p.pct.Load()) }

// stop ends the ticker and waits for it.
func (p *progress) stop() {
	close(p.done)
	<-p.wg
}

// track starts the ticker of c's progress. A write that finds the claim lost
// cancels the ingestion with that cause.
func (s *Service) track(ctx context.Context, cancel context.CancelCauseFunc, c *Claim) *progress {
	p := &progress{done: make(chan struct{}), wg: make(chan struct{})}
	renew := s.opts.Lease / 4
	go func() {
		defer close(p.wg)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		written, at := 0, time.Now()
		for {
			select {
			case <-p.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pct := p.get()
			if pct == written && time.Since(at) < renew {
				continue
			}
			err := s.opts.Store.UpdateFileProgress(ctx, c, pct, s.opts.Now().Add(s.opts.Lease))
			switch {
			case fault.Is(err, fault.Conflict):
				cancel(err)
				return
			case err != nil && ctx.Err() == nil:
				s.log.Warn("writing the progress of a file", slog.String("file_id", c.File.ID), slog.Any("err", err))
			case err == nil:
				written, at = pct, time.Now()
			}
		}
	}()
	return p
}
