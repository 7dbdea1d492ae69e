package extract

import (
	"context"
	"errors"
	"fmt"
)

// NoTextNote is the Note of a PDF that has pages but no text layer.
const NoTextNote = "no text was found (the PDF may be scanned images)"

// pdfText reads the text of every page of a PDF. Page contents are decoded
// one page at a time and dropped once read, so memory stays near the size of
// the file plus the text. A page that cannot be read is skipped and named in
// the Note; when no page can be read, that is the error.
func pdfText(ctx context.Context, data []byte, lim Limits, progress func(float64)) (*Document, error) {
	d, err := openPDF(data, lim)
	if err != nil {
		return nil, limited(err, lim)
	}
	d.stop = ctx.Err
	pages, err := d.pages()
	if err != nil {
		return nil, limited(err, lim)
	}
	if len(pages) == 0 {
		return nil, errors.New("the PDF has no pages")
	}
	doc := &Document{Pages: make([]Page, 0, len(pages))}
	var firstErr error
	failed, hasText := 0, false
	room := d.lim.MaxTextBytes
	for i, p := range pages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		text, full, err := d.pageText(p, int(min(room, int64(maxInt))))
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case d.budget <= 0:
			return nil, decodedError("PDF", d.lim.MaxDecodedBytes)
		case d.ops <= 0:
			return nil, &LimitError{LimitOperations, fmt.Sprintf("the PDF's pages run more than %d operations (a form drawn counts %d), the limit per file", d.lim.MaxOperations, formOperations)}
		}
		text, cut := cutText(text, room)
		room -= int64(len(text))
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("page %d: %w", i+1, err)
			}
		}
		if text != "" {
			hasText = true
		}
		doc.Pages = append(doc.Pages, Page{Number: i + 1, Text: text})
		if progress != nil {
			progress(float64(i+1) / float64(len(pages)))
		}
		if full || cut || room <= 0 {
			doc.Note, doc.Cut = textCutNote(d.lim.MaxTextBytes)+fmt.Sprintf(" (pages after %d were not read)", i+1), true
			return doc, nil
		}
	}
	switch {
	case !hasText && firstErr != nil:
		return nil, firstErr
	case !hasText:
		doc.Note = NoTextNote
	case failed > 0:
		doc.Note = fmt.Sprintf("%d of %d pages could not be read (%v)", failed, len(pages), firstErr)
	}
	return doc, nil
}

// limited turns running out of the decoding budget into a *LimitError.
func limited(err error, lim Limits) error {
	if errors.Is(err, errTooMuchData) {
		return decodedError("PDF", lim.MaxDecodedBytes)
	}
	return err
}

// pageText interprets a page's content streams, keeping at most room bytes
// of text; full says the text reached room.
func (d *pdfDoc) pageText(p pdfPage, room int) (text string, full bool, err error) {
	cv, err := d.resolve(p.dict["Contents"])
	if err != nil {
		return "", false, err
	}
	var streams []*pdfStream
	switch c := cv.(type) {
	case nil:
	case *pdfStream:
		streams = append(streams, c)
	case pdfArray:
		for _, x := range c {
			if s := d.streamOf(x); s != nil {
				streams = append(streams, s)
			}
		}
	default:
		return "", false, errors.New("/Contents is not a stream")
	}
	w := &textWriter{room: room}
	in := newInterp(d, w)
	var firstErr error
	for _, s := range streams {
		data, err := d.decode(s, maxStreamBytes)
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("content stream: %w", err)
			}
			continue
		}
		// Streams of one page are one content stream cut in pieces; they
		// run in one state (an operator may even straddle two of them, which
		// is rare enough to ignore).
		in.run(data, p.resources)
		if w.full {
			break
		}
	}
	if errors.Is(in.warning, errTooMuchData) || d.budget <= 0 {
		firstErr = errTooMuchData
	}
	text = normalizeSpace(w.b.String())
	if text == "" && firstErr != nil {
		return "", w.full, firstErr
	}
	return text, w.full, nil
}
