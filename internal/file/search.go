package file

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"slices"
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
	q.FileIDs = q.FileIDs[:0:0]
	for _, f := range files {
		if f.Status == Ready {
			names[f.ID] = f.Name
			q.FileIDs = append(q.FileIDs, f.ID)
		}
	}
	if len(q.FileIDs) == 0 {
		return []Hit{}, nil
	}
	var hits []Hit
	switch {
	case s.opts.RAG != nil:
		hits, err = s.opts.RAG.Query(ctx, q)
	case s.opts.Embedder != nil:
		hits, err = s.hybrid(ctx, q)
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

// hybrid fuses the full-text and vector rankings of a wider pool than asked
// for, then caps the fused list per file and in all.
func (s *Service) hybrid(ctx context.Context, q Query) ([]Hit, error) {
	vecs, err := s.opts.Embedder.Embed(ctx, []string{q.Text})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("embedding the query: %w", err)
		}
		// Full text still answers while the embeddings endpoint does not.
		s.log.WarnContext(ctx, "embedding a search query failed; searching by full text only", slog.Any("err", err))
		return s.opts.Store.SearchText(ctx, q)
	}
	pool := q
	pool.Limit = max(4*q.Limit, 50)
	pool.PerFile = 0
	if q.PerFile > 0 {
		pool.PerFile = max(4*q.PerFile, 10)
	}
	text, err := s.opts.Store.SearchText(ctx, pool)
	if err != nil {
		return nil, err
	}
	vector, err := s.opts.Store.SearchVector(ctx, pool, vecs[0])
	if err != nil {
		return nil, err
	}
	return Fuse(q.Limit, q.PerFile, text, vector), nil
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
