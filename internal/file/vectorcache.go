package file

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// DefaultVectorCacheMB is the memory the vectors of searched files may take in
// one process when none is configured (rag.vectorCacheMB): the vectors of
// about 170,000 chunks of 384 dimensions, or 42,000 of 1,536.
const DefaultVectorCacheMB = 64

// fileVectors are the vectors of one ingestion of one file, held in memory so
// that a search does not read them from the database again: each normalized
// to length 1 and quantized to int8 with a scale of its own, four times
// smaller than float32. Rankings from them are approximate; search rescores
// its best candidates with the stored float32 vectors.
type fileVectors struct {
	fileID string
	// version is the file's UpdatedAt when the vectors were read: a file
	// ingested again (here or by another process sharing the database) has a
	// newer one, and its vectors are read again.
	version time.Time
	dims    int
	// ids are the chunks' row ids, idx their indexes in the file; vector i is
	// data[i*dims:(i+1)*dims] times scale[i].
	ids   []int64
	idx   []int32
	scale []float32
	data  []int8
}

// bytes is about how much memory v holds.
func (v *fileVectors) bytes() int64 {
	return int64(len(v.data)) + 16*int64(len(v.ids)) + 128
}

// add quantizes vec, a stored vector of v.dims dimensions, and appends it.
func (v *fileVectors) add(id int64, idx int, vec []float32) {
	v.ids = append(v.ids, id)
	v.idx = append(v.idx, int32(idx))
	v.scale = append(v.scale, quantize(vec, &v.data))
}

// vectorCache holds the vectors of recently searched files within a memory
// budget, dropping the least recently used first. It is safe for concurrent
// use; loads of one file are shared by the searches that wait for them.
type vectorCache struct {
	budget int64

	mu      sync.Mutex
	used    int64
	lru     *list.List // of *fileVectors, most recent first
	byID    map[string]*list.Element
	loading map[string]*vectorLoad
}

// vectorLoad is a load in flight, which other searches for the same file
// and version wait for.
type vectorLoad struct {
	version time.Time
	dims    int
	done    chan struct{}
	v       *fileVectors
	err     error
}

func newVectorCache(budgetBytes int64) *vectorCache {
	return &vectorCache{budget: budgetBytes, lru: list.New(), byID: map[string]*list.Element{},
		loading: map[string]*vectorLoad{}}
}

// errTooBig is returned by get for a file whose vectors alone exceed the budget.
type errTooBig struct{}

func (errTooBig) Error() string { return "the file's vectors exceed the vector cache" }

// get returns the vectors of f, ready, as of f.UpdatedAt, that have dims
// dimensions: from memory when they are there for that version and length, else read with load and kept (evicting
// others) when they fit the budget. A file whose vectors exceed the whole
// budget is errTooBig.
func (c *vectorCache) get(ctx context.Context, f *File, dims int, load func(ctx context.Context, f *File, dims int) (*fileVectors, error)) (*fileVectors, error) {
	c.mu.Lock()
	if e, ok := c.byID[f.ID]; ok {
		v := e.Value.(*fileVectors)
		if v.version.Equal(f.UpdatedAt) && v.dims == dims {
			c.lru.MoveToFront(e)
			c.mu.Unlock()
			return v, nil
		}
		c.removeLocked(e)
	}
	if l, ok := c.loading[f.ID]; ok && l.version.Equal(f.UpdatedAt) && l.dims == dims {
		c.mu.Unlock()
		select {
		case <-l.done:
			return l.v, l.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	l := &vectorLoad{version: f.UpdatedAt, dims: dims, done: make(chan struct{})}
	c.loading[f.ID] = l
	c.mu.Unlock()

	// The load is shared: it does not end with the context of the search that
	// started it (the others may still want it), only with its own timeout.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	l.v, l.err = load(lctx, f, dims)
	cancel()
	if l.err == nil && l.v.bytes() > c.budget {
		l.v, l.err = nil, errTooBig{}
	}

	c.mu.Lock()
	if c.loading[f.ID] == l {
		delete(c.loading, f.ID)
	}
	if l.err == nil {
		if e, ok := c.byID[f.ID]; ok {
			c.removeLocked(e)
		}
		c.byID[f.ID] = c.lru.PushFront(l.v)
		c.used += l.v.bytes()
		for c.used > c.budget {
			c.removeLocked(c.lru.Back())
		}
	}
	c.mu.Unlock()
	close(l.done)
	return l.v, l.err
}

// drop forgets the vectors of the file id, deleted or about to be ingested again.
func (c *vectorCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		c.removeLocked(e)
	}
}

func (c *vectorCache) removeLocked(e *list.Element) {
	v := c.lru.Remove(e).(*fileVectors)
	delete(c.byID, v.fileID)
	c.used -= v.bytes()
}

// usage returns the bytes held and how many files they belong to.
func (c *vectorCache) usage() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used, c.lru.Len()
}
