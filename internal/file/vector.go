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

// quantize appends v, scaled to length 1, to data as int8 and returns the
// scale that turns those back into v's components: component i is about
// data[i]*scale. A vector of zeros gives zeros and scale 0.
func quantize(v []float32, data *[]int8) float32 {
	var sum float64
	var peak float32
	for _, x := range v {
		sum += float64(x) * float64(x)
		peak = max(peak, x, -x)
	}
	if sum == 0 {
		*data = append(*data, make([]int8, len(v))...)
		return 0
	}
	norm := float32(1 / math.Sqrt(sum))
	peak *= norm
	k := 127 / peak
	for _, x := range v {
		*data = append(*data, int8(math.Round(float64(x*norm*k))))
	}
	return 1 / k
}

// dotInt8 is the dot product of two int8 vectors of the same length, eight
// components a round, for the compiler to keep in registers without bounds
// checks.
func dotInt8(a, b []int8) int32 {
	var s0, s1, s2, s3 int32
	for len(a) >= 8 && len(b) >= 8 {
		x, y := (*[8]int8)(a), (*[8]int8)(b)
		s0 += int32(x[0])*int32(y[0]) + int32(x[4])*int32(y[4])
		s1 += int32(x[1])*int32(y[1]) + int32(x[5])*int32(y[5])
		s2 += int32(x[2])*int32(y[2]) + int32(x[6])*int32(y[6])
		s3 += int32(x[3])*int32(y[3]) + int32(x[7])*int32(y[7])
		a, b = a[8:], b[8:]
	}
	for i := range min(len(a), len(b)) {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// decodeInto reads a vector stored by EncodeVector into v, which has its length.
func decodeInto(v []float32, b []byte) {
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}
