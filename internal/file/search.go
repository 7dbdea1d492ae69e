package file

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
)

// rrfK is the constant of reciprocal rank fusion: a hit at rank r of a list
// adds 1/(rrfK+r), so that the top ranks of either list count about alike.
const rrfK = 60

// Search returns the passages of q.FileIDs that best answer q.Text, best
// first, at most q.PerFile per file and q.Limit (0: 10) in all. Files that are
// not ready are skipped. By default the search is full text; with an Embedder
// it is hybrid, the full-text and vector rankings fused by reciprocal rank;
// with a RAG API it is the API's. When the query cannot be embedded, hybrid
// search falls back to full text (and logs why).
func (s *Service) Search(ctx context.Context, q Query) ([]Hit, error) {
	if q.Limit <= 0 {
		q.Limit = 10
	}
	files, err := s.opts.Store.GetFiles(ctx, q.FileIDs)
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(files))
	ready := make([]*File, 0, len(files))
	for _, f := range files {
		names[f.ID] = f.Name
		if f.Status == Ready {
			ready = append(ready, f)
		}
	}
	if s.vectors != nil {
		// Files another process deleted need no room in memory any more.
		for _, id := range q.FileIDs {
			if _, ok := names[id]; !ok {
				s.vectors.drop(id)
			}
		}
	}
	q.FileIDs = make([]string, len(ready))
	for i, f := range ready {
		q.FileIDs[i] = f.ID
	}
	if len(q.FileIDs) == 0 {
		return []Hit{}, nil
	}
	var hits []Hit
	switch {
	case s.opts.RAG != nil:
		hits, err = s.opts.RAG.Query(ctx, q)
	case s.opts.Embedder != nil:
		hits, err = s.hybrid(ctx, q, ready)
	default:
		hits, err = s.opts.Store.SearchText(ctx, q)
	}
	if err != nil {
		return nil, err
	}
	for i := range hits {
		hits[i].FileName = names[hits[i].FileID]
	}
	return hits, nil
}

// Unready returns the files of ids that exist but are not searched, being
// pending, processing or failed, in the order of ids: what a search of ids
// leaves out without a word.
func (s *Service) Unready(ctx context.Context, ids []string) ([]*File, error) {
	files, err := s.opts.Store.GetFiles(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := []*File{}
	for _, f := range files {
		if f.Status != Ready {
			out = append(out, f)
		}
	}
	return out, nil
}

// hybrid fuses the full-text and vector rankings of a wider pool than asked
// for, then caps the fused list per file and in all. The full-text search
// runs while the query is embedded and its vector compared.
func (s *Service) hybrid(ctx context.Context, q Query, files []*File) ([]Hit, error) {
	pool := q
	pool.Limit = max(4*q.Limit, 50)
	pool.PerFile = 0
	if q.PerFile > 0 {
		pool.PerFile = max(4*q.PerFile, 10)
	}
	var (
		text    []Hit
		textErr error
		wg      sync.WaitGroup
	)
	wg.Go(func() { text, textErr = s.opts.Store.SearchText(ctx, pool) })
	vector, err := s.vectorPool(ctx, q, pool, files)
	wg.Wait()
	if textErr != nil {
		return nil, textErr
	}
	if err != nil {
		if ctx.Err() != nil || !errors.Is(err, errEmbedQuery) {
			return nil, err
		}
		// Full text still answers while the embeddings endpoint does not.
		s.log.WarnContext(ctx, "embedding a search query failed; searching by full text only", slog.Any("err", err))
		return capHits(text, q.Limit, q.PerFile), nil
	}
	return Fuse(q.Limit, q.PerFile, text, vector), nil
}

// errEmbedQuery marks a failure to embed the query, after which hybrid search
// answers by full text alone.
var errEmbedQuery = errors.New("embedding the query")

// vectorPool embeds q.Text and returns the pool's vector ranking.
func (s *Service) vectorPool(ctx context.Context, q, pool Query, files []*File) ([]Hit, error) {
	vecs, err := s.opts.Embedder.Embed(ctx, []string{q.Text})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errEmbedQuery, err)
	}
	return s.searchVectors(ctx, pool, files, vecs[0])
}

// Fuse merges rankings by reciprocal rank: each hit scores the sum of
// 1/(60+rank) over the lists it is in, scaled so that a hit first in every
// list scores 1. Hits are the same passage when their file and chunk are.
// The result keeps perFile hits per file (0: any) and limit in all.
func Fuse(limit, perFile int, lists ...[]Hit) []Hit {
	type key struct {
		file  string
		chunk int
	}
	fused := map[key]*Hit{}
	var order []*Hit
	for _, list := range lists {
		for rank, h := range list {
			k := key{h.FileID, h.Chunk}
			f, ok := fused[k]
			if !ok {
				c := h
				c.Score = 0
				f = &c
				fused[k] = f
				order = append(order, f)
			}
			f.Score += 1.0 / float64(rrfK+rank+1)
		}
	}
	scale := float64(rrfK+1) / float64(max(len(lists), 1))
	slices.SortStableFunc(order, func(a, b *Hit) int {
		return cmp.Compare(b.Score, a.Score)
	})
	out := []Hit{}
	perCount := map[string]int{}
	for _, h := range order {
		if len(out) == limit {
			break
		}
		if perFile > 0 && perCount[h.FileID] == perFile {
			continue
		}
		perCount[h.FileID]++
		h.Score = min(h.Score*scale, 1)
		out = append(out, *h)
	}
	return out
}
