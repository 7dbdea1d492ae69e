package file

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

// vectorsOf returns a load function giving n vectors of dims dimensions.
func vectorsOf(n int) func(context.Context, *File, int) (*fileVectors, error) {
	return func(_ context.Context, f *File, dims int) (*fileVectors, error) {
		v := &fileVectors{fileID: f.ID, version: f.UpdatedAt, dims: dims}
		vec := make([]float32, dims)
		for i := range n {
			vec[i%dims] = 1
			v.add(int64(i), i, vec)
		}
		return v, nil
	}
}

func TestVectorCacheEviction(t *testing.T) {
	ctx := context.Background()
	const dims, n = 64, 100
	one := vectorsOf(n)
	size := func() int64 { v, _ := one(ctx, &File{ID: "x"}, dims); return v.bytes() }()
	// Room for three files, not four.
	c := newVectorCache(3*size + size/2)
	now := time.Now()
	files := make([]*File, 5)
	for i := range files {
		files[i] = &File{ID: fmt.Sprintf("file_%d", i), UpdatedAt: now}
	}
	loads := 0
	load := func(ctx context.Context, f *File, dims int) (*fileVectors, error) {
		loads++
		return one(ctx, f, dims)
	}
	for _, f := range files[:3] {
		if _, err := c.get(ctx, f, dims, load); err != nil {
			t.Fatal(err)
		}
	}
	// file_0 is used again, so file_1 is the least recently used.
	if _, err := c.get(ctx, files[0], dims, load); err != nil {
		t.Fatal(err)
	}
	if loads != 3 {
		t.Errorf("%d loads for 3 files, one searched twice", loads)
	}
	if _, err := c.get(ctx, files[3], dims, load); err != nil {
		t.Fatal(err)
	}
	used, count := c.usage()
	if used > c.budget || count != 3 {
		t.Errorf("cache holds %d bytes of %d files, want at most %d bytes, 3 files", used, count, c.budget)
	}
	c.mu.Lock()
	_, has1 := c.byID["file_1"]
	_, has0 := c.byID["file_0"]
	c.mu.Unlock()
	if has1 || !has0 {
		t.Errorf("after eviction: file_0 held %v, file_1 held %v; want the least recently used (file_1) gone", has0, has1)
	}

	// A new version of a file, or another length of vector, is read again.
	loads = 0
	newer := &File{ID: "file_0", UpdatedAt: now.Add(time.Second)}
	if _, err := c.get(ctx, newer, dims, load); err != nil {
		t.Fatal(err)
	}
	if _, err := c.get(ctx, newer, 32, load); err != nil {
		t.Fatal(err)
	}
	if loads != 2 {
		t.Errorf("%d loads for a new version and a new length, want 2", loads)
	}
	c.drop("file_0")
	if _, count := c.usage(); count != 2 {
		t.Errorf("%d files held after drop, want 2", count)
	}

	// A file larger than the whole budget is not held.
	big := vectorsOf(10 * n)
	if _, err := c.get(ctx, &File{ID: "big", UpdatedAt: now}, dims, big); !errors.As(err, new(errTooBig)) {
		t.Errorf("get of a file over the budget: %v, want errTooBig", err)
	}
	if used, _ := c.usage(); used > c.budget {
		t.Errorf("cache holds %d bytes, over its budget of %d", used, c.budget)
	}
}

func TestQuantizedDot(t *testing.T) {
	a := []float32{0.5, -0.25, 1, 0, 0.125, 2, -1, 0.75, 0.3}
	b := []float32{1, 1, -0.5, 2, 0, 0.25, 0.5, -1, 0.9}
	var qa, qb []int8
	sa, sb := quantize(a, &qa), quantize(b, &qb)
	got := float64(dotInt8(qa, qb)) * float64(sa) * float64(sb)
	na, nb := Normalize(a), Normalize(b)
	var want float64
	for i := range na {
		want += float64(na[i]) * float64(nb[i])
	}
	if math.Abs(got-want) > 0.01 {
		t.Errorf("quantized cosine %v, want %v ± 0.01", got, want)
	}
	var qz []int8
	if s := quantize(make([]float32, 4), &qz); s != 0 || len(qz) != 4 {
		t.Errorf("zero vector: scale %v, %d components", s, len(qz))
	}
}
