package file

import (
	"encoding/binary"
	"math"
)

// EncodeVector returns v as float32 little-endian bytes, the form vectors are
// stored in.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector reads a vector stored by EncodeVector.
func DecodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// Normalize returns v scaled to length 1 (v itself when it is all zeros).
func Normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	n := float32(1 / math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * n
	}
	return out
}

// CosineEncoded is the cosine similarity of unit, a vector of length 1, and
// the encoded vector b of the same dimension, without decoding b into a slice.
func CosineEncoded(unit []float32, b []byte) float64 {
	var dot, norm float64
	for i, x := range unit {
		y := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		dot += float64(x) * y
		norm += y * y
	}
	if norm == 0 {
		return 0
	}
	return dot / math.Sqrt(norm)
}
