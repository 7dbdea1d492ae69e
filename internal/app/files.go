package app

import (
	"context"
	"log/slog"
	"slices"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/file/extract"
	"github.com/relay-ai/relay/internal/store"
)

// fileService builds the file service of the config over the store: full text
// by default, hybrid with rag.embeddings, or the RAG API of rag.api_url.
func fileService(cfg *config.Config, st store.Store, log *slog.Logger) *file.Service {
	fc := cfg.FileConfig
	opts := file.Options{
		Store: st, Logger: log.With(slog.String("part", "files")), VectorCacheMB: cfg.RAG.VectorCacheMB,
		Limits: extract.Limits{
			MaxDecodedBytes: int64(fc.MaxDecodedMB) << 20,
			MaxTextBytes:    int64(fc.MaxTextMB) << 20,
			MaxPages:        fc.MaxPages,
			MaxOperations:   int64(fc.MaxPDFOperations),
		},
		MaxChunks:      fc.MaxChunks,
		ExtractTimeout: fc.ExtractTimeout.Duration,
	}
	if opts.VectorCacheMB == 0 {
		opts.VectorCacheMB = -1 // rag.vectorCacheMB: 0 turns the cache off
	}
	switch e := cfg.RAG.Embeddings; {
	case cfg.RAG.APIURL != "":
		opts.RAG = &file.RAGAPI{URL: cfg.RAG.APIURL}
	case e.Enabled():
		opts.Embedder = &file.OpenAIEmbedder{BaseURL: e.BaseURL, APIKey: e.APIKey, Model: e.Model, Dimensions: e.Dimensions}
	}
	return file.NewService(opts)
}

// unreadableFiles returns the check that keeps agents to their author's files:
// of the given ids, those that name no file or another user's file (any file
// is readable by an admin, and admins may name files still to be uploaded).
func unreadableFiles(st store.Store) func(context.Context, *auth.User, []string) ([]string, error) {
	return func(ctx context.Context, u *auth.User, ids []string) ([]string, error) {
		if u.IsAdmin() {
			return nil, nil
		}
		fs, err := st.GetFiles(ctx, ids)
		if err != nil {
			return nil, err
		}
		var bad []string
		for _, id := range ids {
			i := slices.IndexFunc(fs, func(f *file.File) bool { return f.ID == id })
			if i < 0 || fs[i].Owner != u.ID {
				bad = append(bad, id)
			}
		}
		return bad, nil
	}
}
