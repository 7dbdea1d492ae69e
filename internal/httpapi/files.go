package httpapi

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/quota"
)

// uploadEnvelope is what a multipart upload may carry besides the file
// itself: boundaries, part headers and small fields.
const uploadEnvelope = 64 << 10

// uploadLimit is the cap of one uploaded file in bytes.
func (s *Server) uploadLimit() int64 {
	if s.opts.UploadLimit > 0 {
		return s.opts.UploadLimit
	}
	return file.DefaultMaxSize
}

// bodyLimit is the cap of a request's body: the upload route's is the file
// cap and room for the multipart envelope, every other route's MaxBodyBytes.
func (s *Server) bodyLimit(r *http.Request) int64 {
	if isUpload(r) {
		return s.uploadLimit() + uploadEnvelope
	}
	return s.opts.MaxBodyBytes
}

// isUpload reports whether r is a file upload (POST /api/files).
func isUpload(r *http.Request) bool {
	return r.Method == http.MethodPost && r.URL.Path == "/api/files"
}

// files is the file service, or fault.Unavailable when Relay runs without one.
func (s *Server) files() (*file.Service, error) {
	if s.opts.Files == nil {
		return nil, fault.New(fault.Unavailable, "files are not enabled on this server")
	}
	return s.opts.Files, nil
}

// fileList is the body of GET /api/files.
type fileList struct {
	Data []*file.File `json:"data"`
}

// uploadFile streams the multipart field "file" into the file service: the
// body is never held whole in memory, and a file over the cap is refused
// (413) with nothing stored.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	svc, err := s.files()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The storage quota: a file that would not fit is read only as far as
	// the room left, then refused.
	room, err := s.opts.Quota.FileRoom(r.Context(), userFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	limit := s.uploadLimit()
	quotaBound := room != quota.Unlimited && room < limit
	if quotaBound {
		limit = room
	}
	mr, err := r.MultipartReader()
	if err != nil {
		s.writeError(w, r, fault.New(fault.Invalid, "send the file as multipart/form-data in the field \"file\""))
		return
	}
	otherFile := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			s.writeError(w, r, fault.New(fault.Invalid, "the request has no field \"file\""))
			return
		}
		if err != nil {
			s.writeError(w, r, s.uploadErr(err))
			return
		}
		if part.FormName() != "file" {
			// Other fields (LibreChat sends a few) are read past, not kept;
			// a file among them would be lost if the field "file" follows.
			otherFile = otherFile || isFile(part)
			if _, err := io.Copy(io.Discard, part); err != nil {
				s.writeError(w, r, s.uploadErr(err))
				return
			}
			continue
		}
		if otherFile {
			s.writeError(w, r, errMoreFiles)
			return
		}
		// The rest of the form is read before the file is recorded, so that a
		// second file refuses the upload with nothing stored.
		body := &soleFile{part: part, form: mr}
		var (
			bound file.Bound
			over  *file.OverBound
		)
		bound.Files, bound.Bytes = s.opts.Quota.FileLimits(userFrom(r.Context()))
		f, err := svc.UploadWithin(r.Context(), userFrom(r.Context()).ID, rawFileName(part.Header.Get("Content-Disposition")), body, limit, bound)
		switch {
		case errors.As(err, &over) && over.Files:
			// Other uploads of the user's, at once, were recorded first.
			err = s.opts.Quota.FilesExceeded()
		case errors.As(err, &over):
			err = s.opts.Quota.BytesExceeded()
		case fault.Is(err, fault.TooLarge) && quotaBound:
			err = s.opts.Quota.BytesExceeded()
		case fault.Is(err, fault.TooLarge):
			err = s.uploadErr(err)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusCreated, f)
		return
	}
}

// errMoreFiles refuses an upload that carries more than one file: only one
// would be stored, and the client would not learn that the others were lost.
var errMoreFiles = fault.New(fault.Invalid, "the request carries more than one file: send one file, in the field \"file\", per request")

// isFile reports whether part is a file: the field "file", or any field
// with a filename.
func isFile(part *multipart.Part) bool {
	return part.FormName() == "file" || rawFileName(part.Header.Get("Content-Disposition")) != ""
}

// soleFile reads the form's file part, and at its end the rest of the form:
// instead of that end it returns errMoreFiles when another file follows, or
// the error that cut the form off.
type soleFile struct {
	part *multipart.Part
	form *multipart.Reader
	done bool
}

func (f *soleFile) Read(p []byte) (int, error) {
	n, err := f.part.Read(p)
	if !errors.Is(err, io.EOF) || f.done {
		return n, err
	}
	f.done = true
	for {
		next, nerr := f.form.NextPart()
		if errors.Is(nerr, io.EOF) {
			return n, io.EOF
		}
		if nerr == nil && isFile(next) {
			nerr = errMoreFiles
		}
		if nerr == nil {
			_, nerr = io.Copy(io.Discard, next)
		}
		if nerr != nil {
			return n, nerr
		}
	}
}

// uploadErr classifies a failure to read an upload: past the cap it is too
// large (naming the config key that sets the cap), a fault stays as it is, and
// anything else is a malformed request.
func (s *Server) uploadErr(err error) error {
	var (
		tooBig *http.MaxBytesError
		fe     *fault.Error
	)
	switch {
	case errors.As(err, &tooBig) || fault.Is(err, fault.TooLarge):
		return file.TooLarge(s.uploadLimit())
	case errors.As(err, &fe):
		return err
	}
	return fault.Wrap(fault.Invalid, err, "reading the upload: %v", err)
}

// rawFileName is the filename parameter of a part's Content-Disposition as
// the client sent it (mime/multipart's FileName would cut it to its base
// name by this system's rules; file.CleanName does that for every system).
func rawFileName(disposition string) string {
	_, params, err := mime.ParseMediaType(disposition)
	if err != nil {
		return ""
	}
	return params["filename"]
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) {
	svc, err := s.files()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	fs, err := svc.List(r.Context(), userFrom(r.Context()).ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, fileList{Data: fs})
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request) {
	svc, err := s.files()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	f, err := svc.Get(r.Context(), userFrom(r.Context()).ID, r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, f)
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) {
	svc, err := s.files()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	u := userFrom(r.Context())
	if err := svc.Delete(r.Context(), u.ID, u.Role == auth.RoleAdmin, r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
