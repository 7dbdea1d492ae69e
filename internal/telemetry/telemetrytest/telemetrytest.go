// Package telemetrytest holds what tests of traces need: an OTLP/HTTP
// receiver that keeps the spans it is sent, and a Telemetry that exports to
// it.
package telemetrytest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/relay-ai/relay/internal/telemetry"
)

// Span is one span as the receiver got it.
type Span struct {
	Name                      string
	Kind                      tracepb.Span_SpanKind
	TraceID, SpanID, ParentID string // hex; ParentID "" for a root
	Attrs                     map[string]string
	Error                     bool // the status is Error
	Service                   string
	StartNano, EndNano        uint64
}

// Receiver is an OTLP/HTTP traces endpoint (POST /v1/traces, protobuf) that
// keeps what it receives.
type Receiver struct {
	// URL is the receiver's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	mu      sync.Mutex
	spans   []Span
	headers []http.Header
}

// NewReceiver starts a receiver for the life of the test.
func NewReceiver(t testing.TB) *Receiver {
	t.Helper()
	rc := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{
					Name: s.GetName(), Kind: s.GetKind(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()),
					Attrs:    attrs(s.GetAttributes()),
					Error:    s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					Service:  service, StartNano: s.GetStartTimeUnixNano(), EndNano: s.GetEndTimeUnixNano(),
				})
			}
		}
	}
	rc.mu.Lock()
	rc.spans = append(rc.spans, got...)
	rc.headers = append(rc.headers, r.Header.Clone())
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

// attrs renders attribute values as text: strings as they are, numbers in
// decimal, lists as their elements joined by commas.
func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		var parts []byte
		for i, e := range x.ArrayValue.GetValues() {
			if i > 0 {
				parts = append(parts, ',')
			}
			parts = append(parts, value(e)...)
		}
		return string(parts)
	}
	return ""
}

// Spans returns the spans received so far, in the order they arrived.
func (rc *Receiver) Spans() []Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans)
}

// Headers returns the headers of each export request received so far.
func (rc *Receiver) Headers() []http.Header {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.headers)
}

// Find returns the first received span named name, false when none is.
func (rc *Receiver) Find(name string) (Span, bool) {
	for _, s := range rc.Spans() {
		if s.Name == name {
			return s, true
		}
	}
	return Span{}, false
}

// Env returns a getenv that knows only vars.
func Env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// New returns a Telemetry that traces every span (always_on) and exports to
// rc, with vars added to its environment; it is shut down at the end of the
// test. Call Flush to have the spans exported before reading them.
func New(t testing.TB, rc *Receiver, vars map[string]string) *telemetry.Telemetry {
	t.Helper()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rc.URL, "OTEL_TRACES_SAMPLER": "always_on"}
	for k, v := range vars {
		env[k] = v
	}
	tel, err := telemetry.New(context.Background(), telemetry.Options{Getenv: Env(env), Version: "test"})
	if err != nil {
		t.Fatalf("telemetry.New: %v", err)
	}
	if tel.Tracing() == "" {
		t.Fatal("telemetry.New: tracing is off")
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

// Flush exports the spans that tel ended and stops it: spans ended later are
// not exported.
func Flush(t testing.TB, tel *telemetry.Telemetry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatalf("flushing spans: %v", err)
	}
}
