// The steps of a run, for its trace page, rebuilt from what GET /api/runs/{id}
// returns (internal/run/store.go: the run, its events, the request bodies sent
// to the provider and the tool calls).
//
// Events carry the times: an agent's model turn streams its text
// (message.delta), then reports its usage, then runs the turn's tool calls
// (tool.started / tool.finished), and the next turn begins once they are all
// done. So a turn starts when the agent's previous step ended and its model
// part ends at its usage event (or at its first tool call, or its last piece
// of text). Request bodies are stored per agent in the order sent, so the
// k-th body of an agent is its k-th turn's.
import type { ModelRequest, RunDetail, ToolCallRecord, Usage } from '../../lib/ops';

export const HANDOFF_PREFIX = 'lc_transfer_to_';

export interface ModelStep {
  kind: 'model';
  key: string;
  agent: string;
  /** 1-based number of this turn among the agent's turns */
  turn: number;
  start: number;
  end: number;
  /** true while the model is still answering */
  open: boolean;
  request?: ModelRequest;
  usage?: Usage;
  text: string;
  /** a summary of turns dropped to fit the context window, not a turn of the agent */
  summary?: boolean;
}

export interface ToolStep {
  kind: 'tool' | 'handoff';
  key: string;
  agent: string;
  start: number;
  end: number;
  open: boolean;
  id: string;
  name: string;
  arguments: string;
  result?: string;
  isError: boolean;
  durationMs?: number;
  /** the agent handed to, for handoffs */
  target?: string;
}

export interface NoteStep {
  kind: 'error' | 'warning';
  key: string;
  agent: string;
  start: number;
  end: number;
  open: false;
  message: string;
}

export type Step = ModelStep | ToolStep | NoteStep;

export interface Timeline {
  steps: Step[];
  start: number;
  end: number;
  /** the saved answer's text, from run.finished, or the text streamed so far */
  answer: string;
  agents: string[];
}

interface Turn {
  step: ModelStep;
  modelEnd?: number;
  lastDelta?: number;
  tools: ToolStep[];
}

interface AgentState {
  boundary: number;
  turns: Turn[];
  pending: Set<string>;
}

const ms = (iso?: string) => (iso ? Date.parse(iso) : NaN);

/** The step of a request that no event tells of, at its own times when it has them. */
function bare(agent: string, i: number, r: ModelRequest, at: number): ModelStep {
  const a = ms(r.sent_at);
  const b = ms(r.finished_at);
  const timed = Number.isFinite(a) && Number.isFinite(b) && b >= a;
  return {
    kind: 'model',
    key: `model-${agent}-${i + 1}`,
    agent,
    turn: i + 1,
    start: timed ? a : at,
    end: timed ? b : at,
    open: false,
    request: r,
    usage: r.usage?.total_tokens ? r.usage : undefined,
    text: '',
  };
}

/** Builds the timeline of a run; now is the end of steps still going. */
export function buildTimeline(d: RunDetail, now = Date.now()): Timeline {
  const events = [...(d.events ?? [])].sort((a, b) => a.seq - b.seq);
  const runStart = [ms(d.started_at), ms(events[0]?.created_at), ms(d.created_at)].find((x) => Number.isFinite(x)) ?? now;
  const live = d.status === 'queued' || d.status === 'running';
  const runEnd = live ? now : (ms(d.finished_at) || ms(events[events.length - 1]?.created_at) || now);

  const states = new Map<string, AgentState>();
  const order: Step[] = [];
  const records = new Map<string, ToolCallRecord>((d.tool_calls ?? []).map((t) => [t.id, t]));
  let last = runStart;
  let answer = '';
  let streamed = '';
  let finished = false;

  const state = (agent: string): AgentState => {
    let s = states.get(agent);
    if (!s) {
      s = { boundary: agent === d.agent_id && states.size === 0 ? runStart : last, turns: [], pending: new Set() };
      states.set(agent, s);
    }
    return s;
  };
  const current = (s: AgentState, agent: string, at: number, kind: 'text' | 'tool'): Turn => {
    const cur = s.turns[s.turns.length - 1];
    const toolsDone = cur && cur.tools.length > 0 && s.pending.size === 0;
    const needNew = !cur || (kind === 'text' && cur.tools.length > 0) || (kind === 'tool' && toolsDone);
    if (!needNew) return cur;
    const step: ModelStep = {
      kind: 'model',
      key: `model-${agent}-${s.turns.length + 1}`,
      agent,
      turn: s.turns.length + 1,
      start: Math.min(s.boundary, at),
      end: at,
      open: false,
      text: '',
    };
    const t: Turn = { step, tools: [] };
    s.turns.push(t);
    order.push(step);
    return t;
  };

  for (const e of events) {
    const t = ms(e.created_at) || last;
    const data = e.data ?? {};
    const agent: string = data.agent_id || d.agent_id;
    switch (e.type) {
      case 'message.delta': {
        const s = state(agent);
        const turn = current(s, agent, t, 'text');
        turn.step.text += data.text ?? '';
        turn.lastDelta = t;
        streamed += data.text ?? '';
        break;
      }
      case 'usage': {
        const s = state(agent);
        const turn = current(s, agent, t, 'text');
        turn.step.usage = data.usage;
        turn.modelEnd ??= t;
        break;
      }
      case 'tool.started': {
        const s = state(agent);
        const turn = current(s, agent, t, 'tool');
        turn.modelEnd ??= t;
        const name: string = data.name ?? '';
        const handoff = name.startsWith(HANDOFF_PREFIX);
        const step: ToolStep = {
          kind: handoff ? 'handoff' : 'tool',
          key: `tool-${data.id ?? e.seq}`,
          agent,
          start: t,
          end: t,
          open: true,
          id: data.id ?? '',
          name,
          arguments: data.arguments ?? '',
          isError: false,
          target: handoff ? name.slice(HANDOFF_PREFIX.length) : undefined,
        };
        turn.tools.push(step);
        s.pending.add(step.id);
        order.push(step);
        break;
      }
      case 'tool.finished': {
        const s = state(agent);
        const step = s.turns.flatMap((x) => x.tools).find((x) => x.id === data.id);
        if (step) {
          step.open = false;
          step.end = t;
          step.result = data.result ?? '';
          step.isError = !!data.is_error;
          step.durationMs = typeof data.duration_ms === 'number' ? data.duration_ms : undefined;
          if (step.durationMs !== undefined && step.durationMs > step.end - step.start) step.start = step.end - step.durationMs;
        }
        s.pending.delete(data.id);
        s.boundary = Math.max(s.boundary, t);
        break;
      }
      case 'error':
        order.push({ kind: 'error', key: `error-${e.seq}`, agent, start: t, end: t, open: false, message: data.message ?? 'The run failed.' });
        break;
      case 'run.warning':
        order.push({ kind: 'warning', key: `warning-${e.seq}`, agent, start: t, end: t, open: false, message: data.message ?? '' });
        break;
      case 'run.finished':
        finished = true;
        answer = answerText(data.message);
        break;
    }
    last = Math.max(last, t);
  }

  // The model part of each turn, and the request bodies in order per agent.
  const byAgent = new Map<string, ModelRequest[]>();
  for (const r of [...(d.requests ?? [])].sort((a, b) => a.seq - b.seq)) {
    if (r.purpose === 'summary') {
      // Made while the agent's request was built: no event tells of it.
      order.push({ ...bare(r.agent_id, 0, r, runStart), key: `summary-${r.seq}`, summary: true });
      continue;
    }
    if (!byAgent.has(r.agent_id)) byAgent.set(r.agent_id, []);
    byAgent.get(r.agent_id)!.push(r);
  }
  for (const [agent, s] of states) {
    const reqs = byAgent.get(agent) ?? [];
    s.turns.forEach((turn, i) => {
      const st = turn.step;
      st.end = turn.modelEnd ?? turn.lastDelta ?? st.end;
      const lastTurn = i === s.turns.length - 1;
      st.open = live && lastTurn && turn.modelEnd === undefined;
      if (st.open) st.end = now;
      const req = reqs[i];
      st.request = req;
      // A Relay that keeps each request's own times and usage says exactly.
      if (req?.finished_at) {
        const a = ms(req.sent_at);
        const b = ms(req.finished_at);
        if (Number.isFinite(a) && Number.isFinite(b) && b >= a) {
          st.start = a;
          st.end = b;
          st.open = false;
        }
      }
      if (req?.usage && req.usage.total_tokens && !st.usage) st.usage = req.usage;
    });
    // Turns that left no event (an empty answer): their bodies still show.
    for (let i = s.turns.length; i < reqs.length; i++) {
      order.push(bare(agent, i, reqs[i], s.boundary));
    }
    byAgent.delete(agent);
  }
  for (const [agent, reqs] of byAgent) {
    reqs.forEach((r, i) => order.push(bare(agent, i, r, runStart)));
  }

  // Tool calls the events do not have (or still open) take the stored record.
  for (const step of order) {
    if (step.kind !== 'tool' && step.kind !== 'handoff') continue;
    const rec = records.get(step.id);
    if (!rec) {
      if (step.open) step.end = live ? now : runEnd;
      continue;
    }
    if (step.result === undefined) {
      step.result = rec.result;
      step.isError = rec.is_error;
      step.open = false;
    }
    const a = ms(rec.started_at);
    const b = ms(rec.finished_at);
    if (Number.isFinite(a) && Number.isFinite(b) && b >= a) {
      step.start = a;
      step.end = b;
    }
    if (typeof rec.duration_ms === 'number') step.durationMs = rec.duration_ms;
    else if (step.durationMs === undefined && rec.duration) {
      step.durationMs = rec.duration / 1e6;
      step.end = step.start + step.durationMs;
    }
  }

  const steps = order
    .map((s, i) => ({ s, i }))
    .sort((a, b) => a.s.start - b.s.start || a.i - b.i)
    .map((x) => x.s);
  const agents = [...new Set([d.agent_id, ...steps.map((s) => s.agent)].filter(Boolean))];
  const end = Math.max(runEnd, ...steps.map((s) => s.end));
  return { steps, start: runStart, end, answer: finished ? answer || streamed : streamed, agents };
}

/** The saved answer's text: its text parts, a paragraph each (the message's
 * text runs them together), or its text. */
function answerText(m: any): string {
  const parts = Array.isArray(m?.parts) ? m.parts.filter((p: any) => p?.type === 'text' && p.text) : [];
  if (parts.length) return parts.map((p: any) => String(p.text).trim()).join('\n\n');
  return m?.text ?? '';
}

/** Pretty JSON of a body (a parsed value, or text that may be JSON). */
export function pretty(v: unknown): string {
  if (typeof v === 'string') {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v, null, 2) ?? '';
}
