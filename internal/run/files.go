package run

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/tool"
)

// attach resolves the ids of files a user attaches with a message, refusing
// files they may not read (fault.NotFound) and dropping repeated ids.
func (s *Service) attach(ctx context.Context, u *auth.User, ids []string) ([]prompt.File, error) {
	ids = compactIDs(ids)
	if len(ids) == 0 {
		return nil, nil
	}
	if s.Prep.AttachedFiles == nil {
		return nil, fault.New(fault.Invalid, "files: this server keeps no files to attach")
	}
	return s.Prep.AttachedFiles(ctx, u, ids)
}

// Attached returns the files attached to a conversation as a message sees
// them: those of the messages on its branch before it (earlier, their ids:
// checked when they were attached; deleted ones are left out), then the ones
// the message adds.
func (p *Preparer) Attached(ctx context.Context, earlier []string, added []prompt.File) ([]prompt.File, error) {
	earlier = compactIDs(earlier)
	var out []prompt.File
	if len(earlier) > 0 && p.Files != nil {
		fs, err := p.Files(ctx, earlier)
		if err != nil {
			return nil, err
		}
		out = fs
	}
	for _, f := range added {
		if f.ID == "" || !slices.ContainsFunc(out, func(g prompt.File) bool { return g.ID == f.ID }) { // a file named only is no upload to find twice
			out = append(out, f)
		}
	}
	return out, nil
}

// compactIDs drops empty and repeated ids, keeping the first of each.
func compactIDs(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// fileIDs returns the ids of the files attached in parts.
func fileIDs(parts []Part) []string {
	var ids []string
	for _, p := range parts {
		if p.Type == PartFile && p.FileID != "" {
			ids = append(ids, p.FileID)
		}
	}
	return ids
}

// Sources collects the sources of the tool calls in parts, in order, for the
// answer's citations.
func Sources(parts []Part) []tool.Source {
	var out []tool.Source
	for _, p := range parts {
		if p.Type == PartToolCall && p.Tool != nil {
			out = append(out, p.Tool.Sources...)
		}
	}
	return out
}

// search is the Preparer's search for the RAG context, remembering each
// answer for the rest of the run: the agents of a run share one message and
// its attachments, so they need not search again.
func (rn *runner) search(ctx context.Context, q file.Query) ([]file.Hit, error) {
	key := strings.Join(q.FileIDs, "\x00") + "\x01" + q.Text + "\x01" + strconv.Itoa(q.Limit) + "\x01" + strconv.Itoa(q.PerFile)
	rn.mu.Lock()
	hits, ok := rn.searched[key]
	rn.mu.Unlock()
	if ok {
		return hits, nil
	}
	hits, err := rn.s.Prep.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	rn.mu.Lock()
	if rn.searched == nil {
		rn.searched = map[string][]file.Hit{}
	}
	rn.searched[key] = hits
	rn.mu.Unlock()
	return hits, nil
}
