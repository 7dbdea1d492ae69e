package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
)

// Two `relay serve` processes on one database; the first runs a chat and is
// killed with SIGKILL in the middle of it. The run's followers elsewhere —
// the chat's SSE resumed on the second process, an OpenAI client streaming
// the run's completion from the second process, and relay chat's renderer
// following from a third process (this test's, with no live state of the
// run) — all end, within a deadline, with the same end: the run failed, as
// the second process failed it for the dead one.
func TestKilledProducerFollowersEndAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts relay twice; skipped with -short")
	}
	bin := buildRelay(t)
	mock := llmtest.StartAimock(t, slowFixtures)
	dir := t.TempDir()
	addrA, addrB := freeAddr(t), freeAddr(t)
	config := func(addr string) string {
		return writeConfig(t, t.TempDir(), fmt.Sprintf(`server:
  addr: %s
  data_dir: %s
  log_level: warn
scheduler:
  heartbeat_interval: 1s
  dead_after: 3s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
agents:
  - {id: worker, provider: mock, model: m}
`, addr, filepath.Join(dir, "data"), mock))
	}
	cfgA, cfgB := config(addrA), config(addrB)
	a := startRelay(t, bin, cfgA, "http://"+addrA, "")
	startRelay(t, bin, cfgB, "http://"+addrB, "")

	req, _ := http.NewRequest("POST", "http://"+addrA+"/api/chat", strings.NewReader(`{"agent_id":"worker","text":"slow job"}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	runID := resp.Header.Get("Relay-Run-Id")
	deltas := 0
	sc := bufio.NewScanner(resp.Body)
	for deltas < 2 && sc.Scan() {
		if sc.Text() == "event: message.delta" {
			deltas++
		}
	}
	if runID == "" || deltas < 2 {
		t.Fatalf("the chat's run %q streamed %d pieces before its stream ended", runID, deltas)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	// The SSE of the chat, resumed on the other process after its first event.
	sse := make(chan sseEnd, 1)
	// Each follower says when it has read something of the run, so that the
	// kill comes while all three are tailing it live.
	var sseTailing, v1Tailing atomic.Bool
	go func() {
		sse <- followSSE(ctx, "http://"+addrB+"/api/runs/"+runID+"/events", "1", func() { sseTailing.Store(true) })
	}()
	// An OpenAI client reading the run's completion as a stream on the other
	// process.
	v1 := make(chan v1End, 1)
	go func() {
		v1 <- followV1(ctx, "http://"+addrB+"/v1/chat/completions/chatcmpl-"+strings.TrimPrefix(runID, "run_")+"?stream=true", func() { v1Tailing.Store(true) })
	}()
	// relay chat's renderer, following the run through the database.
	type cliEnd struct {
		final    run.RunFinished
		out, err string
		failed   error
	}
	cli := make(chan cliEnd, 1)
	var out syncBuffer // relay chat prints the answer as it follows
	go func() {
		var errOut bytes.Buffer
		var end cliEnd
		e := &env{IO: IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(string) (string, bool) { return "", false }}, configPath: cfgB}
		end.failed = withRuns(ctx, e, "", func(_ *app.App, r *app.Runner, u *auth.User) error {
			var err error
			end.final, err = showRun(ctx, r.Runs.Follow(ctx, u, runID, 0), &out, &errOut, func(run.ElicitationRequested) {})
			return err
		})
		end.out, end.err = out.String(), errOut.String()
		cli <- end
	}()
	// The kill comes once the answer's first word has streamed and every
	// follower reads the run (one that were late would catch up from the
	// store; waiting makes the live path the one tested).
	poll.Until(t, 30*time.Second, "the first word streamed and every follower reading the run", func() bool {
		return sseTailing.Load() && v1Tailing.Load() && strings.HasPrefix(out.String(), "one")
	})
	a.kill(t)

	s := <-sse
	if s.err != nil {
		t.Fatalf("the resumed SSE did not end with the run (%v); events %v", s.err, s.types)
	}
	n := len(s.types)
	if n < 3 || s.types[n-2] != "error" || s.types[n-1] != "run.finished" {
		t.Fatalf("SSE events %v; want the rest of the deltas, then error and run.finished", s.types)
	}
	p, err := run.Decode(run.EventRunFinished, []byte(s.data[n-1]))
	if err != nil {
		t.Fatal(err)
	}
	sseFinal := p.(run.RunFinished)
	if sseFinal.Status != run.StatusFailed || sseFinal.Error != schedule.ReasonDead {
		t.Errorf("SSE run.finished %+v; want failed with %q", sseFinal, schedule.ReasonDead)
	}
	if sseFinal.Message == nil || !strings.Contains(sseFinal.Message.Text, "one") {
		t.Errorf("SSE run.finished answer %+v; want what had been streamed", sseFinal.Message)
	}

	o := <-v1
	if o.err != nil {
		t.Fatalf("the /v1 stream did not end with the run (%v); text %q", o.err, o.text)
	}
	if o.final.Error.Type != "relay_run_failed" || o.final.Error.Message != sseFinal.Error || o.done {
		t.Errorf("/v1 stream ended with %+v ([DONE] %v); want the run's failure %q as its last data line", o.final, o.done, sseFinal.Error)
	}
	if !strings.HasPrefix(o.text, "one") || !strings.HasPrefix(sseFinal.Message.Text, o.text) {
		t.Errorf("/v1 streamed %q; want the answer streamed before the kill, %q", o.text, sseFinal.Message.Text)
	}

	c := <-cli
	if c.failed != nil {
		t.Fatalf("relay chat's renderer: %v\nstdout %s\nstderr %s", c.failed, c.out, c.err)
	}
	if diff := cmp.Diff(sseFinal, c.final); diff != "" {
		t.Errorf("relay chat's run.finished differs from the SSE's (-sse +cli):\n%s", diff)
	}
	if !strings.HasPrefix(c.out, "one") {
		t.Errorf("relay chat printed %q; want the answer from its start", c.out)
	}
}

// sseEnd is what an SSE client read: the kinds and data of the events, and
// why reading stopped (nil when the server ended the stream).
type sseEnd struct {
	types, data []string
	err         error
}

// v1End is what an OpenAI client of a streamed completion read: the text of
// its chunks, the last data line (an error, for a run that failed), whether
// [DONE] came, and why reading stopped (nil when the server ended the stream).
type v1End struct {
	text  string
	final struct {
		Error struct{ Message, Type string }
	}
	done bool
	err  error
}

// followV1 reads a streamed chat completion from url, calling got once it
// has read its first chunk.
func followV1(ctx context.Context, url string, got func()) v1End {
	var end v1End
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		end.err = err
		return end
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		end.err = fmt.Errorf("HTTP %d", resp.StatusCode)
		return end
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	last := ""
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if d == "[DONE]" {
			end.done = true
			continue
		}
		last = d
		got()
		var c struct {
			Choices []struct{ Delta struct{ Content string } }
		}
		if json.Unmarshal([]byte(d), &c) == nil && len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	end.text, end.err = text.String(), sc.Err()
	if end.err == nil {
		end.err = json.Unmarshal([]byte(last), &end.final)
	}
	return end
}

// followSSE reads a run's event stream from url after Last-Event-ID last,
// calling got for each event it reads.
func followSSE(ctx context.Context, url, last string, got func()) sseEnd {
	var end sseEnd
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Last-Event-ID", last)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		end.err = err
		return end
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		end.err = fmt.Errorf("HTTP %d", resp.StatusCode)
		return end
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			end.types = append(end.types, v)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			end.data = append(end.data, v)
			got()
		}
	}
	end.err = sc.Err()
	return end
}
