package extract

import (
	"bytes"
	"compress/flate"
	"compress/lzw"
	"compress/zlib"
	"encoding/ascii85"
	"errors"
	"fmt"
	"io"
)

// maxStreamBytes bounds one decoded stream, so that a small file that
// inflates to gigabytes fails instead of exhausting memory: a stream is held
// whole while it is read, so this bounds the memory of one extraction
// (documented in docs/config.md).
const maxStreamBytes = 8 << 20

// errStreamTooLarge is the error for a stream that decodes to more than the limit.
var errStreamTooLarge = errors.New("stream is larger than")

// errTooMuchData is the error once a document has decoded more than its budget.
var errTooMuchData = errors.New("the PDF decodes to too much data")

// errImageFilter marks a stream whose filter only ever holds image data.
var errImageFilter = errors.New("image filter")

// decode applies a stream's filters, in order, with their parameters.
func (d *pdfDoc) decode(s *pdfStream, limit int) ([]byte, error) {
	fv, _ := d.resolve(s.dict["Filter"])
	pv, _ := d.resolve(s.dict["DecodeParms"])
	if pv == nil {
		pv, _ = d.resolve(s.dict["DP"])
	}
	var filters []pdfName
	var parms []pdfDict
	switch f := fv.(type) {
	case nil:
	case pdfName:
		filters = []pdfName{f}
		parms = []pdfDict{d.dictOf(pv)}
	case pdfArray:
		pa, _ := pv.(pdfArray)
		for i, x := range f {
			filters = append(filters, d.nameOf(x))
			var p pdfDict
			if i < len(pa) {
				p = d.dictOf(pa[i])
			}
			parms = append(parms, p)
		}
	default:
		return nil, errors.New("bad /Filter")
	}
	budgeted := d.budget < limit
	limit = min(limit, d.budget)
	data := s.raw
	for i, f := range filters {
		var err error
		if data, err = applyFilter(f, parms[i], data, limit); err != nil {
			if budgeted && errors.Is(err, errStreamTooLarge) {
				d.budget = 0
				return nil, errTooMuchData
			}
			return nil, err
		}
	}
	if len(data) > limit {
		if budgeted {
			d.budget = 0
			return nil, errTooMuchData
		}
		return nil, fmt.Errorf("%w %d MB", errStreamTooLarge, limit>>20)
	}
	d.budget -= len(data)
	if d.budget <= 0 {
		return nil, errTooMuchData
	}
	return data, nil
}

func applyFilter(f pdfName, p pdfDict, data []byte, limit int) ([]byte, error) {
	switch f {
	case "FlateDecode", "Fl":
		out, err := inflate(data, limit)
		if err != nil {
			return nil, err
		}
		return predict(p, out)
	case "LZWDecode", "LZW":
		if ec, ok := intOf(p["EarlyChange"]); ok && ec == 0 {
			return nil, errors.New("LZWDecode with /EarlyChange 0 is not supported")
		}
		r := lzw.NewReader(bytes.NewReader(data), lzw.MSB, 8)
		defer r.Close()
		out, err := readLimited(r, limit)
		if err != nil && len(out) == 0 {
			return nil, fmt.Errorf("LZWDecode: %w", err)
		}
		return predict(p, out)
	case "ASCIIHexDecode", "AHx":
		return asciiHex(data)
	case "ASCII85Decode", "A85":
		return ascii85Decode(data, limit)
	case "RunLengthDecode", "RL":
		return runLength(data, limit)
	case "DCTDecode", "DCT", "JPXDecode", "CCITTFaxDecode", "CCF", "JBIG2Decode":
		return nil, fmt.Errorf("%w %s", errImageFilter, f)
	case "Crypt":
		return nil, errEncrypted
	}
	return nil, fmt.Errorf("unknown filter %s", f)
}

// readLimited reads r to the end or to limit+1 bytes, whichever is first.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if len(out) > limit {
		return nil, fmt.Errorf("%w %d MB", errStreamTooLarge, limit>>20)
	}
	return out, err
}

// inflate decodes zlib data, accepting raw deflate data and data that is cut
// short (both common in real files) as long as something decodes.
func inflate(data []byte, limit int) ([]byte, error) {
	var r io.ReadCloser
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err == nil {
		r = zr
	} else {
		r = flate.NewReader(bytes.NewReader(data))
	}
	defer r.Close()
	out, err := readLimited(r, limit)
	if err != nil {
		if len(out) == 0 {
			return nil, fmt.Errorf("FlateDecode: %w", err)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, zlib.ErrChecksum) {
			return out, nil
		}
		var ce flate.CorruptInputError
		if errors.As(err, &ce) {
			return out, nil
		}
		return nil, fmt.Errorf("FlateDecode: %w", err)
	}
	return out, nil
}

// predict undoes a PNG (10–15) or TIFF (2) predictor.
func predict(p pdfDict, data []byte) ([]byte, error) {
	pred, _ := intOf(p["Predictor"])
	if pred <= 1 {
		return data, nil
	}
	colors, bpc, cols := 1, 8, 1
	if v, ok := intOf(p["Colors"]); ok {
		colors = v
	}
	if v, ok := intOf(p["BitsPerComponent"]); ok {
		bpc = v
	}
	if v, ok := intOf(p["Columns"]); ok {
		cols = v
	}
	if colors < 1 || colors > 32 || bpc < 1 || bpc > 16 || cols < 1 || cols > 1<<20 {
		return nil, errors.New("bad predictor parameters")
	}
	bpp := max(1, colors*bpc/8)
	row := (colors*bpc*cols + 7) / 8
	if pred == 2 {
		if bpc != 8 {
			return nil, errors.New("TIFF predictor with other than 8 bits per component is not supported")
		}
		out := append([]byte(nil), data...)
		for start := 0; start < len(out); start += row {
			end := min(start+row, len(out))
			for i := start + bpp; i < end; i++ {
				out[i] += out[i-bpp]
			}
		}
		return out, nil
	}
	if pred < 10 {
		return nil, fmt.Errorf("unknown predictor %d", pred)
	}
	out := make([]byte, 0, len(data)/(row+1)*row)
	prev := make([]byte, row)
	cur := make([]byte, row)
	for start := 0; start+1 < len(data); start += row + 1 {
		typ := data[start]
		n := copy(cur, data[start+1:min(start+1+row, len(data))])
		clear(cur[n:])
		for i := 0; i < row; i++ {
			var left, upLeft byte
			if i >= bpp {
				left = cur[i-bpp]
				upLeft = prev[i-bpp]
			}
			up := prev[i]
			switch typ {
			case 0:
			case 1:
				cur[i] += left
			case 2:
				cur[i] += up
			case 3:
				cur[i] += byte((int(left) + int(up)) / 2)
			case 4:
				cur[i] += paeth(left, up, upLeft)
			default:
				return nil, fmt.Errorf("bad PNG predictor row type %d", typ)
			}
		}
		out = append(out, cur[:n]...)
		prev, cur = cur, prev
	}
	return out, nil
}

func paeth(a, b, c byte) byte {
	p := int(a) + int(b) - int(c)
	pa, pb, pc := abs(p-int(a)), abs(p-int(b)), abs(p-int(c))
	switch {
	case pa <= pb && pa <= pc:
		return a
	case pb <= pc:
		return b
	}
	return c
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func asciiHex(data []byte) ([]byte, error) {
	out := make([]byte, 0, len(data)/2)
	var hi byte
	half := false
	for _, c := range data {
		if c == '>' {
			break
		}
		if isSpace(c) {
			continue
		}
		v, ok := unhex(c)
		if !ok {
			return nil, fmt.Errorf("ASCIIHexDecode: bad digit %q", c)
		}
		if half {
			out = append(out, hi<<4|v)
		} else {
			hi = v
		}
		half = !half
	}
	if half {
		out = append(out, hi<<4)
	}
	return out, nil
}

func ascii85Decode(data []byte, limit int) ([]byte, error) {
	data = bytes.TrimSpace(data)
	data = bytes.TrimPrefix(data, []byte("<~"))
	if i := bytes.Index(data, []byte("~>")); i >= 0 {
		data = data[:i]
	}
	out, err := readLimited(ascii85.NewDecoder(bytes.NewReader(data)), limit)
	if err != nil {
		return nil, fmt.Errorf("ASCII85Decode: %w", err)
	}
	return out, nil
}

func runLength(data []byte, limit int) ([]byte, error) {
	var out []byte
	for i := 0; i < len(data); {
		n := int(data[i])
		i++
		switch {
		case n == 128:
			return out, nil
		case n < 128:
			end := min(i+n+1, len(data))
			out = append(out, data[i:end]...)
			i = end
		default:
			if i >= len(data) {
				return out, nil
			}
			out = append(out, bytes.Repeat(data[i:i+1], 257-n)...)
			i++
		}
		if len(out) > limit {
			return nil, fmt.Errorf("%w %d MB", errStreamTooLarge, limit>>20)
		}
	}
	return out, nil
}
