package extract

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// errEncrypted is what an encrypted PDF yields: Relay does not decrypt. It
// is what the file's owner reads (docs/api.md "Files"), so it says what to
// do instead.
var errEncrypted = errors.New("the PDF is encrypted (password-protected), which Relay cannot read: upload a copy without a password or encryption")

// xrefEntry says where an object lives: at a byte offset in the file (inStm
// false) or as the idx-th object of object stream stm.
type xrefEntry struct {
	off   int
	stm   int
	idx   int
	inStm bool
}

// objStream is a decoded object stream: its data and where each object starts.
type objStream struct {
	data  []byte
	first int
	nums  []int
	offs  []int
}

// pdfDoc is an opened PDF: the cross-reference (where each object is), the
// trailer, and caches of parsed objects. Only object streams are kept
// decoded, a few at a time; page contents are decoded by the caller one page
// at a time.
type pdfDoc struct {
	data    []byte
	xref    map[int]xrefEntry
	trailer pdfDict
	objects map[int]any
	stms    map[int]*objStream
	stmLRU  []int
	busy    map[int]bool // objects being parsed, to break reference cycles
	fonts   map[int]*pdfFont
	// budget is how many more bytes streams may decode to. Forms drawn
	// from forms, or one stream used by every page, could otherwise make a
	// small file decode without end.
	budget int
	// ops is how many more operators content streams may run; each form
	// drawn costs formOperations more.
	ops int64
	// stop, when not nil, says why the extraction must end now (its
	// context's error); content streams ask it every stopEvery operators.
	stop func() error
	// lim is what the extraction is bounded by.
	lim Limits
}

// stopEvery is how many operators run between two questions to stop.
const stopEvery = 4096

// maxObjStreams is how many decoded object streams are kept at once.
const maxObjStreams = 4

// openPDF reads the structure of a PDF: its cross-reference, following
// incremental updates, or, when that is broken, a scan of the whole file.
func openPDF(data []byte, lim Limits) (*pdfDoc, error) {
	lim = lim.withDefaults()
	head := data[:min(len(data), 1024)]
	if !bytes.Contains(head, []byte("%PDF-")) {
		return nil, errors.New("not a PDF: the %PDF- header is missing")
	}
	d := &pdfDoc{
		data:    data,
		objects: map[int]any{},
		stms:    map[int]*objStream{},
		busy:    map[int]bool{},
		fonts:   map[int]*pdfFont{},
		budget:  int(min(lim.MaxDecodedBytes, int64(maxInt))),
		ops:     lim.MaxOperations,
		lim:     lim,
	}
	xerr := d.readXrefChain()
	if xerr == nil {
		if _, ok := d.trailer["Encrypt"]; ok {
			return nil, errEncrypted
		}
		if _, err := d.catalog(); err != nil {
			xerr = err
		}
	}
	if xerr != nil {
		// The cross-reference is missing or wrong: rebuild it by finding
		// every "n g obj" in the file.
		d.xref, d.trailer = nil, nil
		d.objects = map[int]any{}
		d.stms = map[int]*objStream{}
		d.stmLRU = nil
		if err := d.scan(); err != nil {
			return nil, fmt.Errorf("%w (and the cross-reference table is unusable: %v)", err, xerr)
		}
		if _, ok := d.trailer["Encrypt"]; ok {
			return nil, errEncrypted
		}
		if _, err := d.catalog(); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// startxref finds the offset given by the last "startxref" of the file.
func (d *pdfDoc) startxref() (int, error) {
	tail := max(0, len(d.data)-4096)
	i := bytes.LastIndex(d.data[tail:], []byte("startxref"))
	if i < 0 {
		i = bytes.LastIndex(d.data, []byte("startxref"))
		if i < 0 {
			return 0, errors.New("no startxref")
		}
	} else {
		i += tail
	}
	l := &lexer{b: d.data, pos: i + len("startxref")}
	v, err := l.object()
	if err != nil {
		return 0, fmt.Errorf("startxref: %w", err)
	}
	off, ok := intOf(v)
	if !ok || off < 0 || off >= len(d.data) {
		return 0, fmt.Errorf("startxref offset %v is outside the file", v)
	}
	return off, nil
}

// readXrefChain reads the newest cross-reference section and every older one
// it points to with /Prev (and /XRefStm in hybrid files). Newer entries win.
func (d *pdfDoc) readXrefChain() error {
	off, err := d.startxref()
	if err != nil {
		return err
	}
	d.xref = map[int]xrefEntry{}
	seen := map[int]bool{}
	for n := 0; ; n++ {
		if seen[off] || n > 1000 {
			break
		}
		seen[off] = true
		trailer, err := d.readXrefAt(off)
		if err != nil {
			return err
		}
		if d.trailer == nil {
			d.trailer = trailer
		} else {
			for k, v := range trailer {
				if _, ok := d.trailer[k]; !ok {
					d.trailer[k] = v
				}
			}
		}
		if x, ok := intOf(trailer["XRefStm"]); ok && !seen[x] && x >= 0 && x < len(d.data) {
			seen[x] = true
			if _, err := d.readXrefAt(x); err != nil {
				return err
			}
		}
		prev, ok := intOf(trailer["Prev"])
		if !ok {
			break
		}
		if prev < 0 || prev >= len(d.data) {
			return fmt.Errorf("/Prev offset %d is outside the file", prev)
		}
		off = prev
	}
	if len(d.xref) == 0 {
		return errors.New("the cross-reference is empty")
	}
	return nil
}

// setEntry records an entry unless a newer section already did.
func (d *pdfDoc) setEntry(num int, e xrefEntry) {
	if num < 0 {
		return
	}
	if _, ok := d.xref[num]; !ok {
		d.xref[num] = e
	}
}

// readXrefAt reads one cross-reference section, a table or a stream, and
// returns its trailer dictionary.
func (d *pdfDoc) readXrefAt(off int) (pdfDict, error) {
	l := &lexer{b: d.data, pos: off, refs: true}
	l.skipSpace()
	if bytes.HasPrefix(d.data[l.pos:], []byte("xref")) {
		l.pos += 4
		return d.readXrefTable(l)
	}
	_, obj, err := d.parseAt(off)
	if err != nil {
		return nil, fmt.Errorf("cross-reference at %d: %w", off, err)
	}
	s, ok := obj.(*pdfStream)
	if !ok || s.dict["Type"] != pdfName("XRef") {
		return nil, fmt.Errorf("no cross-reference at byte %d", off)
	}
	return s.dict, d.readXrefStream(s)
}

func (d *pdfDoc) readXrefTable(l *lexer) (pdfDict, error) {
	for {
		v, err := l.object()
		if err != nil {
			return nil, fmt.Errorf("cross-reference table: %w", err)
		}
		if k, ok := v.(pdfKeyword); ok && k == "trailer" {
			break
		}
		start, ok1 := intOf(v)
		cv, err := l.object()
		if err != nil {
			return nil, fmt.Errorf("cross-reference table: %w", err)
		}
		count, ok2 := intOf(cv)
		if !ok1 || !ok2 || start < 0 || count < 0 || count > len(d.data)/10+1 {
			return nil, fmt.Errorf("cross-reference table: bad subsection header at byte %d", l.pos)
		}
		for i := 0; i < count; i++ {
			ov, err1 := l.object()
			_, err2 := l.object()
			kv, err3 := l.object()
			if err := errors.Join(err1, err2, err3); err != nil {
				return nil, fmt.Errorf("cross-reference table entry %d: %w", start+i, err)
			}
			o, ok := intOf(ov)
			k, _ := kv.(pdfKeyword)
			if !ok || (k != "n" && k != "f") {
				return nil, fmt.Errorf("cross-reference table: bad entry for object %d", start+i)
			}
			if k == "n" {
				d.setEntry(start+i, xrefEntry{off: o})
			}
		}
	}
	v, err := l.object()
	if err != nil {
		return nil, fmt.Errorf("trailer: %w", err)
	}
	t, ok := v.(pdfDict)
	if !ok {
		return nil, errors.New("trailer is not a dictionary")
	}
	return t, nil
}

func (d *pdfDoc) readXrefStream(s *pdfStream) error {
	data, err := d.decode(s, maxStreamBytes)
	if err != nil {
		return fmt.Errorf("cross-reference stream: %w", err)
	}
	wa, _ := s.dict["W"].(pdfArray)
	if len(wa) < 3 {
		return errors.New("cross-reference stream: /W is missing")
	}
	var w [3]int
	total := 0
	for i := range w {
		n, ok := intOf(wa[i])
		if !ok || n < 0 || n > 8 {
			return errors.New("cross-reference stream: bad /W")
		}
		w[i] = n
		total += n
	}
	if total == 0 {
		return errors.New("cross-reference stream: bad /W")
	}
	var index []int
	if ia, ok := s.dict["Index"].(pdfArray); ok {
		for _, v := range ia {
			n, ok := intOf(v)
			if !ok || n < 0 {
				return errors.New("cross-reference stream: bad /Index")
			}
			index = append(index, n)
		}
	} else {
		size, _ := intOf(s.dict["Size"])
		index = []int{0, size}
	}
	field := func(b []byte) int {
		v := 0
		for _, c := range b {
			v = v<<8 | int(c)
		}
		return v
	}
	pos := 0
	for i := 0; i+1 < len(index); i += 2 {
		start, count := index[i], index[i+1]
		for j := 0; j < count; j++ {
			if pos+total > len(data) {
				return nil // a short stream: keep what was read
			}
			typ := 1
			if w[0] > 0 {
				typ = field(data[pos : pos+w[0]])
			}
			f2 := field(data[pos+w[0] : pos+w[0]+w[1]])
			f3 := field(data[pos+w[0]+w[1] : pos+total])
			pos += total
			switch typ {
			case 1:
				d.setEntry(start+j, xrefEntry{off: f2})
			case 2:
				d.setEntry(start+j, xrefEntry{stm: f2, idx: f3, inStm: true})
			}
		}
	}
	return nil
}

// scan rebuilds the cross-reference from every "n g obj" in the file (later
// ones win, as incremental updates append), and finds the trailer: the last
// "trailer" dictionary or cross-reference stream with a /Root, else the
// catalog object itself.
func (d *pdfDoc) scan() error {
	d.xref = map[int]xrefEntry{}
	b := d.data
	var order []int
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("obj"))
		if j < 0 {
			break
		}
		j += i
		i = j + 3
		if j+3 < len(b) && isRegular(b[j+3]) {
			continue
		}
		// Walk back over " gen num" before "obj".
		k := j
		for k > 0 && isSpace(b[k-1]) {
			k--
		}
		ge := k
		for k > 0 && b[k-1] >= '0' && b[k-1] <= '9' {
			k--
		}
		if k == ge || k == 0 || !isSpace(b[k-1]) {
			continue
		}
		for k > 0 && isSpace(b[k-1]) {
			k--
		}
		ne := k
		for k > 0 && b[k-1] >= '0' && b[k-1] <= '9' {
			k--
		}
		if k == ne || (k > 0 && isRegular(b[k-1])) {
			continue
		}
		num, err := strconv.Atoi(string(b[k:ne]))
		if err != nil || num > 1<<24 {
			continue
		}
		if _, ok := d.xref[num]; !ok {
			order = append(order, num)
		}
		d.xref[num] = xrefEntry{off: k}
	}
	if len(d.xref) == 0 {
		return errors.New("no objects found")
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("trailer"))
		if j < 0 {
			break
		}
		j += i
		i = j + 7
		l := &lexer{b: b, pos: i, refs: true}
		if v, err := l.object(); err == nil {
			if t, ok := v.(pdfDict); ok && t["Root"] != nil {
				d.trailer = t
			}
		}
	}
	// Objects inside object streams, and cross-reference streams as trailers.
	var stms []int
	for _, num := range order {
		v, err := d.object(num)
		if err != nil {
			continue
		}
		s, ok := v.(*pdfStream)
		if !ok {
			continue
		}
		switch s.dict["Type"] {
		case pdfName("ObjStm"):
			stms = append(stms, num)
		case pdfName("XRef"):
			if s.dict["Root"] != nil {
				d.trailer = s.dict
			}
		}
	}
	for _, stm := range stms {
		os, err := d.objStream(stm)
		if err != nil {
			continue
		}
		for i, num := range os.nums {
			if _, ok := d.xref[num]; !ok {
				d.xref[num] = xrefEntry{stm: stm, idx: i, inStm: true}
				order = append(order, num)
			}
		}
	}
	if d.trailer == nil {
		for _, num := range order {
			v, err := d.object(num)
			if err != nil {
				continue
			}
			if dd, ok := v.(pdfDict); ok && dd["Type"] == pdfName("Catalog") {
				d.trailer = pdfDict{"Root": pdfRef{num: num}}
			}
		}
	}
	if d.trailer == nil {
		return errors.New("no document catalog found")
	}
	return nil
}

// parseAt parses the indirect object "num gen obj … endobj" at off.
func (d *pdfDoc) parseAt(off int) (int, any, error) {
	if off < 0 || off >= len(d.data) {
		return 0, nil, fmt.Errorf("object offset %d is outside the file", off)
	}
	l := &lexer{b: d.data, pos: off, refs: false}
	nv, err1 := l.object()
	_, err2 := l.object()
	kv, err3 := l.object()
	num, ok := intOf(nv)
	if err := errors.Join(err1, err2, err3); err != nil || !ok || kv != pdfKeyword("obj") {
		return 0, nil, fmt.Errorf("no object at byte %d", off)
	}
	l.refs = true
	v, err := l.object()
	if err != nil {
		return num, nil, fmt.Errorf("object %d: %w", num, err)
	}
	if dict, ok := v.(pdfDict); ok && l.hasKeyword("stream") {
		l.skipSpace()
		l.pos += len("stream")
		if l.pos < len(l.b) && l.b[l.pos] == '\r' {
			l.pos++
		}
		if l.pos < len(l.b) && l.b[l.pos] == '\n' {
			l.pos++
		}
		start := l.pos
		end := -1
		if n, ok := d.streamLength(dict["Length"]); ok && n >= 0 && start+n <= len(d.data) {
			e := &lexer{b: d.data, pos: start + n}
			if e.hasKeyword("endstream") {
				end = start + n
			}
		}
		if end < 0 {
			k := bytes.Index(d.data[start:], []byte("endstream"))
			if k < 0 {
				return num, nil, fmt.Errorf("object %d: stream without endstream", num)
			}
			end = start + k
			// Drop the end-of-line before endstream.
			if end > start && d.data[end-1] == '\n' {
				end--
			}
			if end > start && d.data[end-1] == '\r' {
				end--
			}
		}
		return num, &pdfStream{dict: dict, raw: d.data[start:end:end]}, nil
	}
	return num, v, nil
}

// streamLength reads a stream's /Length, which may be an indirect object.
func (d *pdfDoc) streamLength(v any) (int, bool) {
	if r, ok := v.(pdfRef); ok {
		if d.busy[r.num] {
			return 0, false
		}
		rv, err := d.object(r.num)
		if err != nil {
			return 0, false
		}
		v = rv
	}
	return intOf(v)
}

// object returns object num, parsed and cached; a missing object is null.
func (d *pdfDoc) object(num int) (any, error) {
	if v, ok := d.objects[num]; ok {
		return v, nil
	}
	e, ok := d.xref[num]
	if !ok {
		return nil, nil
	}
	if d.busy[num] {
		return nil, fmt.Errorf("object %d refers to itself", num)
	}
	d.busy[num] = true
	defer delete(d.busy, num)
	var v any
	if e.inStm {
		if e.stm == num {
			return nil, fmt.Errorf("object stream %d contains itself", num)
		}
		os, err := d.objStream(e.stm)
		if err != nil {
			return nil, err
		}
		if e.idx < 0 || e.idx >= len(os.offs) {
			return nil, fmt.Errorf("object %d: index %d is outside object stream %d", num, e.idx, e.stm)
		}
		l := &lexer{b: os.data, pos: os.first + os.offs[e.idx], refs: true}
		if v, err = l.object(); err != nil {
			return nil, fmt.Errorf("object %d in object stream %d: %w", num, e.stm, err)
		}
	} else {
		got, pv, err := d.parseAt(e.off)
		if err != nil {
			return nil, err
		}
		if got != num {
			return nil, fmt.Errorf("object %d: the cross-reference points at object %d", num, got)
		}
		v = pv
	}
	if k, ok := v.(pdfKeyword); ok {
		return nil, fmt.Errorf("object %d: unexpected %q", num, string(k))
	}
	d.objects[num] = v
	return v, nil
}

// objStream decodes object stream num, keeping the few most recent.
func (d *pdfDoc) objStream(num int) (*objStream, error) {
	if os, ok := d.stms[num]; ok {
		return os, nil
	}
	v, err := d.object(num)
	if err != nil {
		return nil, err
	}
	s, ok := v.(*pdfStream)
	if !ok {
		return nil, fmt.Errorf("object stream %d is not a stream", num)
	}
	data, err := d.decode(s, maxStreamBytes)
	if err != nil {
		return nil, fmt.Errorf("object stream %d: %w", num, err)
	}
	n, _ := intOf(s.dict["N"])
	first, _ := intOf(s.dict["First"])
	if n < 0 || n > len(data) || first < 0 || first > len(data) {
		return nil, fmt.Errorf("object stream %d: bad /N or /First", num)
	}
	os := &objStream{data: data, first: first}
	l := &lexer{b: data[:first]}
	for i := 0; i < n; i++ {
		a, err1 := l.object()
		b, err2 := l.object()
		on, ok1 := intOf(a)
		oo, ok2 := intOf(b)
		if err1 != nil || err2 != nil || !ok1 || !ok2 || oo < 0 || first+oo > len(data) {
			break
		}
		os.nums = append(os.nums, on)
		os.offs = append(os.offs, oo)
	}
	if len(d.stmLRU) >= maxObjStreams {
		delete(d.stms, d.stmLRU[0])
		d.stmLRU = d.stmLRU[1:]
	}
	d.stms[num] = os
	d.stmLRU = append(d.stmLRU, num)
	return os, nil
}

// resolve follows references until a direct value.
func (d *pdfDoc) resolve(v any) (any, error) {
	for i := 0; i < 32; i++ {
		r, ok := v.(pdfRef)
		if !ok {
			return v, nil
		}
		var err error
		if v, err = d.object(r.num); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("a chain of references is too long")
}

// dictOf resolves v to a dictionary (the dictionary of a stream too); nil
// when it is not one.
func (d *pdfDoc) dictOf(v any) pdfDict {
	v, err := d.resolve(v)
	if err != nil {
		return nil
	}
	switch t := v.(type) {
	case pdfDict:
		return t
	case *pdfStream:
		return t.dict
	}
	return nil
}

func (d *pdfDoc) arrayOf(v any) pdfArray {
	v, _ = d.resolve(v)
	a, _ := v.(pdfArray)
	return a
}

func (d *pdfDoc) numberOf(v any) (float64, bool) {
	v, _ = d.resolve(v)
	return numberOf(v)
}

func (d *pdfDoc) intOf(v any) (int, bool) {
	v, _ = d.resolve(v)
	return intOf(v)
}

func (d *pdfDoc) nameOf(v any) pdfName {
	v, _ = d.resolve(v)
	n, _ := v.(pdfName)
	return n
}

func (d *pdfDoc) streamOf(v any) *pdfStream {
	v, _ = d.resolve(v)
	s, _ := v.(*pdfStream)
	return s
}

func (d *pdfDoc) catalog() (pdfDict, error) {
	c := d.dictOf(d.trailer["Root"])
	if c == nil {
		return nil, errors.New("the document catalog (/Root) is missing")
	}
	return c, nil
}

// pdfPage is one page to read: its dictionary and the resources it has,
// inherited from the page tree when the page has none of its own.
type pdfPage struct {
	dict      pdfDict
	resources pdfDict
}

// maxPages bounds the page tree walk; hostile trees can be wide as well as deep.
const maxInt = int(^uint(0) >> 1)

// pages walks the page tree in order; more pages than d.lim.MaxPages is a
// *LimitError.
func (d *pdfDoc) pages() ([]pdfPage, error) {
	cat, err := d.catalog()
	if err != nil {
		return nil, err
	}
	root := cat["Pages"]
	if d.dictOf(root) == nil {
		return nil, errors.New("the page tree (/Pages) is missing")
	}
	var out []pdfPage
	seen := map[int]bool{}
	var walk func(node any, res pdfDict, depth int) error
	walk = func(node any, res pdfDict, depth int) error {
		if depth > maxNesting {
			return errors.New("the page tree is nested too deeply")
		}
		if r, ok := node.(pdfRef); ok {
			if seen[r.num] {
				return nil // a loop or a shared node: visit once
			}
			seen[r.num] = true
		}
		n := d.dictOf(node)
		if n == nil {
			return nil
		}
		if r := d.dictOf(n["Resources"]); r != nil {
			res = r
		}
		kids, hasKids := n["Kids"]
		if t := d.nameOf(n["Type"]); t == "Page" || (!hasKids && t != "Pages") {
			if len(out) >= d.lim.MaxPages {
				return &LimitError{LimitPages, fmt.Sprintf("the PDF has more than %d pages, the limit of pages per file", d.lim.MaxPages)}
			}
			out = append(out, pdfPage{dict: n, resources: res})
			return nil
		}
		for _, k := range d.arrayOf(kids) {
			if err := walk(k, res, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, nil, 0); err != nil {
		return nil, err
	}
	return out, nil
}
