package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

// status maps an error kind to its HTTP status: the one place where that happens.
func status(k fault.Kind) int {
	switch k {
	case fault.Invalid:
		return http.StatusBadRequest
	case fault.Unauthorized:
		return http.StatusUnauthorized
	case fault.Forbidden:
		return http.StatusForbidden
	case fault.NotFound:
		return http.StatusNotFound
	case fault.Conflict:
		return http.StatusConflict
	case fault.TooLarge:
		return http.StatusRequestEntityTooLarge
	case fault.Unavailable:
		return http.StatusServiceUnavailable
	case fault.RateLimited, fault.QuotaExceeded:
		return http.StatusTooManyRequests
	}
	return http.StatusInternalServerError
}

// statusClientGone is the status of a request whose client went away before
// its answer (nginx's 499): what the request log and the metrics record; no
// client reads it.
const statusClientGone = 499

// clientGone answers a request that failed because its client went away (its
// connection closed, ending the request's context) with statusClientGone, and
// reports whether it did: the failure is the context's end, or a read of the
// body that broke off when the connection closed (which the body's readers
// would otherwise report as a malformed body, a 400). Such a failure is no
// fault of the server's nor of the request's: it is not logged as one, nor
// counted as a 500 or a 400 (docs/observability.md, "Labels").
func (s *Server) clientGone(w http.ResponseWriter, r *http.Request, err error) bool {
	if r.Context().Err() == nil || !(errors.Is(err, context.Canceled) || bodyBroken(r)) {
		return false
	}
	s.log.DebugContext(r.Context(), "client went away", slog.String("method", r.Method), slog.String("path", r.URL.Path))
	w.WriteHeader(statusClientGone)
	return true
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    fault.Kind         `json:"code"`
	Message string             `json:"message"`
	Fields  []fault.FieldError `json:"fields,omitempty"`
}

// writeError answers with the JSON error of docs/api.md "Errors". Internal errors are logged
// and answered with a generic message: a 500 never carries internals.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if s.clientGone(w, r, err) {
		return
	}
	err = s.outage(r, err)
	kind := fault.KindOf(err)
	d := errorDetail{Code: kind}
	var fe *fault.Error
	if kind != fault.Internal && errors.As(err, &fe) {
		d.Message, d.Fields = fe.Message, fe.Fields
	} else {
		d.Code, d.Message = fault.Internal, "internal error; the server log has the details"
		s.log.ErrorContext(r.Context(), "request failed", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
	}
	setRetryAfter(w, err)
	writeJSON(w, status(d.Code), errorBody{Error: d})
}

// outage returns err, unless it is an unclassified failure that happened
// while the database cannot be reached: that is the database's outage, a
// 503 that says to try again (docs/api.md "Errors"), not an internal error.
// A lost connection fails the store's calls in many places, none of which can
// tell it from a bug; Ready, asked briefly here, can. The failure itself is
// logged, for the operator.
func (s *Server) outage(r *http.Request, err error) error {
	if fault.KindOf(err) != fault.Internal || s.opts.Ready == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), time.Second)
	defer cancel()
	if s.opts.Ready(ctx) == nil {
		return err
	}
	s.log.ErrorContext(r.Context(), "request failed: the database is not reachable", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
	// Without the cause, which is logged above: /v1's errors show a fault's
	// whole text, causes included.
	return &fault.Error{Kind: fault.Unavailable, Message: "the database is not reachable now; try again shortly", RetryAfter: time.Second}
}

// setRetryAfter sets the Retry-After header, in whole seconds rounded up, of
// an error that says when to try again.
func setRetryAfter(w http.ResponseWriter, err error) {
	if d := fault.RetryAfter(err); d > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10))
	}
}

// refuse writes err in the shape its route's clients read: OpenAI's under
// /v1/, Relay's elsewhere.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if r.ContentLength != 0 && r.ProtoMajor == 1 {
		// The body is left unread: net/http would read the rest of it after
		// answering, to keep the connection for the next request, and a
		// client that never sends it would hold the connection until the
		// read timeout. The connection ends with the answer instead, its
		// reads cut at once.
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		s.writeOpenAIError(w, r, err)
		return
	}
	s.writeError(w, r, err)
}

// writeJSON writes v with the given status.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client went away; nothing to do
}

// decode reads a JSON request body into v, refusing unknown fields, trailing data
// and bodies over the cap. Every unknown field at the body's top level is
// named, not only the first.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return classifyBodyErr(err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		err = classifyBodyErr(err)
		if fe, ok := errors.AsType[*fault.Error](err); ok && len(fe.Fields) == 1 && fe.Fields[0].Message == "unknown field" {
			if all := unknownFields(body, reflect.TypeOf(v)); len(all) > 1 {
				fe.Fields = all
			}
		}
		return err
	}
	if dec.More() {
		return fault.New(fault.Invalid, "request body must hold one JSON value")
	}
	return nil
}

// unknownFields lists the keys of a JSON object that no field of t (a struct
// or a pointer to one) takes, in the order they come, as encoding/json
// matches them: by name, case aside, through embedded structs.
func unknownFields(body []byte, t reflect.Type) []fault.FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	known := map[string]bool{}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
			case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
				collect(f.Type)
			case f.Anonymous && name == "" && f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
				collect(f.Type.Elem())
			case !f.IsExported():
			default:
				known[strings.ToLower(cmp.Or(name, f.Name))] = true
			}
		}
	}
	collect(t)
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []fault.FieldError
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := tok.(string)
		if !known[strings.ToLower(key)] {
			out = append(out, fault.FieldError{Field: key, Message: "unknown field"})
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil
		}
	}
	return out
}

func classifyBodyErr(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fault.New(fault.TooLarge, "request body is over the %d-byte limit", tooBig.Limit)
	}
	return fault.FromJSON(err)
}

// notFound answers a path no route has: in OpenAI's shape under /v1/, like
// every /v1 error (docs/api.md "OpenAI-compatible").
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.refuse(w, r, fault.New(fault.NotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// limit reads the ?limit= of a list request: def when absent, else 1 to 1000.
func limit(r *http.Request, def int) (int, error) {
	l := r.URL.Query().Get("limit")
	if l == "" {
		return def, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > 1000 {
		return 0, fault.New(fault.Invalid, "limit must be a whole number from 1 to 1000")
	}
	return n, nil
}
