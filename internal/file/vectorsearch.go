package file

import (
	"cmp"
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// scoreSegment is how many vectors one scoring task covers: enough to be
// worth a goroutine, few enough to share a large file between cores.
const scoreSegment = 8192

// searchVectors ranks the chunks of files (all ready, as q.FileIDs) by the
// cosine similarity of their vectors to vec, as Storage.SearchVector does:
// the vectors come from the cache, are scored approximately in int8, and the
// best candidates are rescored exactly with the stored float32 vectors. Files
// whose vectors do not fit the cache are searched by the store.
func (s *Service) searchVectors(ctx context.Context, q Query, files []*File, vec []float32) ([]Hit, error) {
	if s.vectors == nil || len(vec) == 0 {
		return s.opts.Store.SearchVector(ctx, q, vec)
	}
	dims := len(vec)
	var (
		sets     []*fileVectors
		uncached []string
	)
	for _, f := range files {
		v, err := s.vectors.get(ctx, f, dims, s.loadVectors)
		switch {
		case errors.As(err, new(errTooBig)):
			uncached = append(uncached, f.ID)
		case err != nil:
			return nil, err
		default:
			sets = append(sets, v)
		}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 10
	}
	// The approximate ranking keeps more candidates than asked for, so that
	// the exact one rarely misses a passage that int8 rounding put lower.
	want := max(2*limit, limit+32)
	perFile := want
	if q.PerFile > 0 {
		perFile = min(want, 2*q.PerFile+8)
	}
	cands := topCandidates(sets, vec, want, perFile)
	hits, err := s.rescore(ctx, cands, vec, limit, q.PerFile)
	if err != nil {
		return nil, err
	}
	if len(uncached) > 0 {
		sq := q
		sq.FileIDs = uncached
		more, err := s.opts.Store.SearchVector(ctx, sq, vec)
		if err != nil {
			return nil, err
		}
		hits = capHits(sortHits(append(hits, more...)), limit, q.PerFile)
	}
	return hits, nil
}

// loadVectors reads the vectors of f with dims dimensions from the store.
func (s *Service) loadVectors(ctx context.Context, f *File, dims int) (*fileVectors, error) {
	v := &fileVectors{fileID: f.ID, version: f.UpdatedAt, dims: dims}
	if f.Chunks > 0 {
		v.ids = make([]int64, 0, f.Chunks)
		v.idx = make([]int32, 0, f.Chunks)
		v.scale = make([]float32, 0, f.Chunks)
		v.data = make([]int8, 0, f.Chunks*dims)
	}
	buf := make([]float32, dims)
	err := s.opts.Store.FileVectors(ctx, f, dims, func(id int64, idx int, raw []byte) {
		decodeInto(buf, raw)
		v.add(id, idx, buf)
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// candidate is a chunk the approximate ranking kept.
type candidate struct {
	id    int64
	set   int // index of its fileVectors
	row   int // its place in them
	score float32
}

// topCandidates scores every vector of sets against vec in int8, on all
// cores, and returns the best want, at most perFile of one file.
func topCandidates(sets []*fileVectors, vec []float32, want, perFile int) []candidate {
	var qdata []int8
	qscale := quantize(vec, &qdata)
	type task struct{ set, from, to int }
	var tasks []task
	scores := make([][]float32, len(sets))
	total := 0
	for i, v := range sets {
		n := len(v.ids)
		scores[i] = make([]float32, n)
		total += n
		for from := 0; from < n; from += scoreSegment {
			tasks = append(tasks, task{i, from, min(from+scoreSegment, n)})
		}
	}
	score := func(t task) {
		v, out := sets[t.set], scores[t.set]
		d := v.dims
		for r := t.from; r < t.to; r++ {
			out[r] = float32(dotInt8(qdata, v.data[r*d:(r+1)*d])) * qscale * v.scale[r]
		}
	}
	// As many as there are CPUs, not threads running Go code: the server's
	// threads follow its load (docs/config.md, server.procs), and a search
	// that waits for more makes them more.
	workers := min(runtime.NumCPU(), len(tasks))
	if workers <= 1 || total < 2*scoreSegment {
		for _, t := range tasks {
			score(t)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= len(tasks) {
						return
					}
					score(tasks[i])
				}
			})
		}
		wg.Wait()
	}
	var all []candidate
	for i, v := range sets {
		top := newTopK(min(perFile, want))
		for r, sc := range scores[i] {
			top.offer(candidate{id: v.ids[r], set: i, row: r, score: sc})
		}
		all = append(all, top.items...)
	}
	slices.SortFunc(all, func(a, b candidate) int { return cmp.Compare(b.score, a.score) })
	return all[:min(len(all), want)]
}

// rescore reads the candidates' chunks, scores them with their exact
// vectors, and returns the best limit, at most perFile (0: any) of one file.
func (s *Service) rescore(ctx context.Context, cands []candidate, vec []float32, limit, perFile int) ([]Hit, error) {
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.id
	}
	chunks, err := s.opts.Store.ReadChunks(ctx, ids)
	if err != nil {
		return nil, err
	}
	qn := Normalize(vec)
	hits := make([]Hit, 0, len(chunks))
	for _, c := range chunks {
		// A chunk re-ingested since its vectors were cached may hold another
		// model's vector now.
		if len(c.Embedding) != 4*len(vec) {
			continue
		}
		hits = append(hits, Hit{FileID: c.FileID, Chunk: c.Index, Page: c.Page, Text: c.Text,
			Score: clip01(CosineEncoded(qn, c.Embedding))})
	}
	return capHits(sortHits(hits), limit, perFile), nil
}

// sortHits orders hits best first, then by file and chunk.
func sortHits(hits []Hit) []Hit {
	slices.SortFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.FileID, b.FileID), cmp.Compare(a.Chunk, b.Chunk))
	})
	return hits
}

// capHits keeps, of hits best first, at most perFile (0: any) of one file
// and limit in all.
func capHits(hits []Hit, limit, perFile int) []Hit {
	out := hits[:0]
	count := map[string]int{}
	for _, h := range hits {
		if len(out) == limit {
			break
		}
		if perFile > 0 && count[h.FileID] == perFile {
			continue
		}
		count[h.FileID]++
		out = append(out, h)
	}
	return out
}

func clip01(s float64) float64 { return min(max(s, 0), 1) }

// topK keeps the k best candidates offered, as a min-heap on score.
type topK struct {
	k     int
	items []candidate
}

func newTopK(k int) *topK { return &topK{k: k, items: make([]candidate, 0, k)} }

func (t *topK) offer(c candidate) {
	if t.k <= 0 {
		return
	}
	h := t.items
	if len(h) < t.k {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[p].score <= h[i].score {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		t.items = h
		return
	}
	if c.score <= h[0].score {
		return
	}
	h[0] = c
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].score < h[m].score {
			m = l
		}
		if r < len(h) && h[r].score < h[m].score {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
