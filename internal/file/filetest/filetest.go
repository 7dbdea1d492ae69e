// Package filetest holds test helpers for files: a fake OpenAI-compatible
// embeddings server whose vectors put paraphrases close together, so that
// tests can tell hybrid retrieval from full text alone without a real model.
package filetest

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
)

// Dims is the length of the fake vectors.
const Dims = 64

// conceptGroups are the paraphrase groups the fake model knows.
var conceptGroups = [][]string{
	{"car", "cars", "vehicle", "vehicles", "automobile", "auto"},
	{"maintenance", "service", "serviced", "servicing", "repair", "inspection", "inspected", "checkup"},
	{"often", "frequency", "interval", "every", "periodically", "regularly", "how"},
	{"month", "months", "monthly", "year", "yearly", "annually", "twelve", "weeks"},
	{"cost", "costs", "price", "prices", "pricing", "fee", "fees", "expensive", "cheap"},
	{"refund", "reimburse", "reimbursement", "money", "back"},
	{"holiday", "holidays", "vacation", "leave", "pto"},
	{"employee", "employees", "staff", "worker", "workers"},
}

// concepts maps each word of conceptGroups to its group's first word; it is
// only read after it is built.
var concepts = func() map[string]string {
	m := map[string]string{}
	for _, g := range conceptGroups {
		for _, word := range g {
			m[word] = g[0]
		}
	}
	return m
}()

// concept returns the concept of a lower-case word: its group's first word,
// or the word itself when it is in no group.
func concept(w string) string {
	if c, ok := concepts[w]; ok {
		return c
	}
	return w
}

// stop words carry no meaning for the fake model.
var stop = map[string]bool{
	"the": true, "a": true, "an": true, "is": true, "are": true, "be": true, "to": true, "of": true,
	"and": true, "or": true, "in": true, "on": true, "for": true, "should": true, "must": true,
	"get": true, "it": true, "its": true, "my": true, "i": true, "we": true, "do": true, "does": true,
	"at": true, "by": true, "with": true, "this": true, "that": true, "what": true, "can": true,
}

// Vector is the fake embedding of text: its concepts hashed into Dims
// dimensions, each with a sign, summed and scaled to length 1.
func Vector(text string) []float32 {
	v := make([]float64, Dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stop[w] {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(concept(w)))
		x := h.Sum64()
		sign := 1.0
		if x&(1<<63) != 0 {
			sign = -1
		}
		v[x%Dims] += sign
	}
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	out := make([]float32, Dims)
	if sum == 0 {
		return out
	}
	n := math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(x / n)
	}
	return out
}

// Embeddings is a running fake embeddings server.
type Embeddings struct {
	// URL is the base URL to configure (…/v1); /embeddings is below it.
	URL string
	// Key is the API key the server requires.
	Key string
	// Requests counts the /embeddings requests answered.
	Requests atomic.Int64
	// Inputs counts the texts embedded.
	Inputs atomic.Int64
}

// StartEmbeddings starts a fake embeddings server, stopped when t ends. It
// requires the bearer token "test-embeddings-key".
func StartEmbeddings(t testing.TB) *Embeddings {
	t.Helper()
	e := &Embeddings{Key: "test-embeddings-key"}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	e.URL = srv.URL + "/v1"
	return e
}

// Handler serves POST /v1/embeddings in OpenAI's format.
func (e *Embeddings) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		if e.Key != "" && r.Header.Get("Authorization") != "Bearer "+e.Key {
			http.Error(w, `{"error":{"message":"invalid api key"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		e.Requests.Add(1)
		e.Inputs.Add(int64(len(req.Input)))
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: req.Model}
		for i, text := range req.Input {
			out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: Vector(text)})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	return mux
}
