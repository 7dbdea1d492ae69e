// The chat page's model: the shapes of conversations, messages and their
// parts (docs/api.md "Chat and runs"), the tree of branches, the answer built
// from a run's events, citations, uploads and the runs to resume after a
// reload. Nothing here touches the DOM.
import { ApiError, get, raw, upload } from './api';
import { readEvents, type SSEvent } from './sse';
import type { Question } from './elicit';

export interface Agent {
  id: string;
  name?: string;
  description?: string;
  provider?: string;
  model?: string;
  tools?: string[];
  conversation_starters?: string[];
  permission?: 'owner' | 'editor' | 'viewer';
}

export interface Conversation {
  id: string;
  user_id?: string;
  agent_id: string;
  title: string;
  created_at: string;
  updated_at: string;
}

export interface Source {
  kind: 'file' | 'web';
  anchor?: string;
  title?: string;
  url?: string;
  snippet?: string;
  file_id?: string;
  file_name?: string;
  page?: number;
  relevance?: number;
}

export interface ToolRecord {
  id: string;
  name: string;
  arguments: string;
  result: string;
  is_error: boolean;
  /** Nanoseconds, as stored; live calls set duration_ms instead. */
  duration?: number;
  duration_ms?: number;
  step?: number;
  sources?: Source[];
  /** Still running (a live call without its tool.finished yet). */
  running?: boolean;
}

export interface Part {
  type: 'text' | 'tool_call' | 'error' | 'file' | 'image' | 'elicitation';
  agent_id?: string;
  text?: string;
  tool?: ToolRecord;
  /** A question of an MCP server (live answers only: the stored answer has its tool's result). */
  question?: Question;
  file_id?: string;
  mime_type?: string;
  data?: string;
}

export interface Message {
  id: string;
  conversation_id: string;
  parent_message_id?: string;
  role: 'user' | 'assistant';
  agent_id?: string;
  text: string;
  parts?: Part[];
  run_id?: string;
  created_at: string;
  sources?: Source[];
  /** How the run that wrote this answer ended when it did not succeed (docs/api.md). */
  run_status?: 'cancelled' | 'failed';
}

export interface Thread extends Conversation {
  messages: Message[];
}

export interface FileRec {
  id: string;
  name: string;
  mime_type?: string;
  size?: number;
  status: 'pending' | 'processing' | 'ready' | 'failed';
  progress?: number;
  chunk_count?: number;
  error?: string;
  note?: string;
  created_at?: string;
}

/** LibreChat's id of "no parent": a new first message of a conversation (docs/api.md). */
export const NO_PARENT = '00000000-0000-0000-0000-000000000000';

/** The agents the user may chat with, every page of them. */
export async function listAgents(): Promise<Agent[]> {
  const all: Agent[] = [];
  let cursor = '';
  for (let i = 0; i < 20; i++) {
    const page = await get<{ data: Agent[]; next_cursor?: string }>(
      `/api/agents?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    all.push(...(page.data ?? []));
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return all;
}

// ---- Names ---------------------------------------------------------------

/** `get-sum__mcp__everything` → {tool: "get-sum", server: "everything"}. */
export function toolLabel(name: string): { tool: string; server?: string } {
  for (const sep of ['__mcp__', '_mcp_']) {
    const i = name.lastIndexOf(sep);
    if (i > 0) return { tool: name.slice(0, i), server: name.slice(i + sep.length) };
  }
  return { tool: name };
}

const HANDOFF = 'lc_transfer_to_';

/** The agent id a handoff tool call transfers to, or null for another tool. */
export function handoffTarget(name: string): string | null {
  return name.startsWith(HANDOFF) ? name.slice(HANDOFF.length) : null;
}

/** An agent's name for people: its name, else its id. */
export function agentName(agents: Map<string, Agent> | Record<string, Agent>, id?: string): string {
  if (!id) return 'Agent';
  const a = agents instanceof Map ? agents.get(id) : agents[id];
  return a?.name?.trim() || id;
}

// ---- The tree of branches ------------------------------------------------

/** The messages of a conversation as a tree: children in the order they were written. */
export class Tree {
  readonly byId = new Map<string, Message>();
  readonly children = new Map<string, Message[]>();
  /** Position in the conversation's order (oldest first): ties of created_at keep it. */
  private readonly order = new Map<string, number>();

  constructor(readonly messages: Message[]) {
    messages.forEach((m, i) => {
      this.byId.set(m.id, m);
      this.order.set(m.id, i);
    });
    for (const m of messages) {
      const p = this.parentKey(m);
      const list = this.children.get(p) ?? [];
      list.push(m);
      this.children.set(p, list);
    }
  }

  /** The key of m's parent in children: '' for a first message (or an unknown parent). */
  private parentKey(m: Message): string {
    const p = m.parent_message_id ?? '';
    return p && this.byId.has(p) ? p : '';
  }

  parent(m: Message): Message | undefined {
    const p = m.parent_message_id;
    return p ? this.byId.get(p) : undefined;
  }

  kids(m: Message | null): Message[] {
    return this.children.get(m ? m.id : '') ?? [];
  }

  /** The newest message in m's subtree that nothing answers yet. */
  latestLeaf(m: Message): Message {
    let best = m;
    let bestAt = this.order.get(m.id) ?? -1;
    const stack = [m];
    while (stack.length) {
      const x = stack.pop()!;
      const kids = this.kids(x);
      if (kids.length === 0) {
        const at = this.order.get(x.id) ?? -1;
        if (at >= bestAt) {
          best = x;
          bestAt = at;
        }
      }
      stack.push(...kids);
    }
    return best;
  }

  /** The newest leaf of the whole conversation: the default branch ends there. */
  newestLeaf(): Message | undefined {
    for (let i = this.messages.length - 1; i >= 0; i--) {
      if (this.kids(this.messages[i]).length === 0) return this.messages[i];
    }
    return undefined;
  }

  /** The messages from the first one down to leaf. */
  path(leafId?: string | null): Message[] {
    let leaf = leafId ? this.byId.get(leafId) : undefined;
    if (!leaf) leaf = this.newestLeaf();
    const out: Message[] = [];
    const seen = new Set<string>();
    for (let m: Message | undefined = leaf; m && !seen.has(m.id); m = this.parent(m)) {
      seen.add(m.id);
      out.push(m);
    }
    return out.reverse();
  }

  /**
   * The variants a switcher at m moves between, and which one m is. A user
   * message's variants are its siblings with different text (a regenerated
   * answer re-sends the same text: that is not an edit). An answer's variants
   * are the answers to its question and to the same question sent again.
   */
  variants(m: Message): { list: Message[][]; index: number } {
    const parent = this.parent(m) ?? null;
    if (m.role === 'user') {
      const groups = groupSame(this.kids(parent).filter((x) => x.role === 'user'));
      return { list: groups, index: groups.findIndex((g) => g.includes(m)) };
    }
    if (!parent || parent.role !== 'user') {
      const sibs = this.kids(parent);
      return { list: sibs.map((s) => [s]), index: sibs.indexOf(m) };
    }
    const same = groupSame(this.kids(this.parent(parent) ?? null).filter((x) => x.role === 'user')).find((g) => g.includes(parent)) ?? [parent];
    const answers = same.flatMap((u) => this.kids(u)).sort((a, b) => (this.order.get(a.id) ?? 0) - (this.order.get(b.id) ?? 0));
    return { list: answers.map((a) => [a]), index: answers.indexOf(m) };
  }

  /** The leaf to show when a switcher picks the variant made of msgs. */
  leafOfVariant(msgs: Message[]): Message {
    let best = this.latestLeaf(msgs[0]);
    for (const m of msgs.slice(1)) {
      const l = this.latestLeaf(m);
      if ((this.order.get(l.id) ?? 0) > (this.order.get(best.id) ?? 0)) best = l;
    }
    return best;
  }
}

/** The file ids attached to a message. */
export function fileIds(m: Message): string[] {
  return (m.parts ?? []).filter((p) => p.type === 'file' && p.file_id).map((p) => p.file_id!);
}

function sameKey(m: Message): string {
  return m.text.trim() + '\u0000' + fileIds(m).join(',');
}

/** Groups messages by text and files, in the order each group first appears. */
function groupSame(msgs: Message[]): Message[][] {
  const groups = new Map<string, Message[]>();
  for (const m of msgs) {
    const k = sameKey(m);
    const g = groups.get(k) ?? [];
    g.push(m);
    groups.set(k, g);
  }
  return [...groups.values()];
}

// ---- Sections of an answer -----------------------------------------------

/** A run of an answer's parts that one agent wrote. */
export interface Section {
  agentId: string;
  parts: Part[];
}

/** Cuts parts into sections, one per run of parts of one agent. */
export function sections(parts: Part[], fallbackAgent = ''): Section[] {
  const out: Section[] = [];
  for (const p of parts) {
    const id = p.agent_id || fallbackAgent;
    const last = out[out.length - 1];
    if (last && last.agentId === id) last.parts.push(p);
    else out.push({ agentId: id, parts: [p] });
  }
  return out;
}

/** The parts of a stored message (older answers have only text). */
export function partsOf(m: Message): Part[] {
  const parts = (m.parts ?? []).filter((p) => m.role === 'assistant' || p.type !== 'file');
  if (m.role === 'assistant' && !parts.some((p) => p.type === 'text') && m.text) {
    return [...parts, { type: 'text', agent_id: m.agent_id, text: m.text }];
  }
  return parts;
}

/** A tool call's duration in milliseconds. */
export function toolMillis(t: ToolRecord): number | undefined {
  if (t.duration_ms != null) return t.duration_ms;
  if (t.duration != null) return t.duration / 1e6;
  return undefined;
}

// ---- Citations -----------------------------------------------------------

// A citation anchor as the model writes it: the six characters `\ue202` (or
// the private-use character U+E202 itself), then turn<N><kind><index>, as
// internal/tool/builtin writes them (FileAnchor, WebAnchor).
const ANCHOR = /[ \t]*(?:\\[uU][eE]202|\uE202)(turn\d+(?:file|search|news|image|video|ref)\d+)/g;
// Other marks of the same format (groups, highlights), written out or not.
const OTHER_MARKS = /\\[uU][eE]20[0-46]|[\uE200-\uE2FF]/g;
// Where a citation number stands in the text until the HTML is made.
const SLOT_OPEN = '\uE000';
const SLOT_CLOSE = '\uE001';
const SLOT = /\uE000(\d+)\uE001/g;

function anchorKey(anchor: string): string {
  return anchor.replace(/^(?:\\[uU][eE]202|\uE202)/, '').toLowerCase();
}

/** A numbered source: what a citation [n] points to. */
export interface Cited {
  n: number;
  source?: Source;
}

/**
 * The citations of one answer: each text of it is passed through number(),
 * which replaces its citation anchors with numbered slots, numbered in the
 * order they first appear in the whole answer; cited lists the sources they
 * name in that order. The slots become superscript links in citeHTML, after
 * the markdown is rendered, so that markdown never sees the anchors. Anchors
 * are matched to sources by their anchor (for an anchor found twice the later
 * source wins: a later search's passages are the ones the model read last).
 */
export class Citations {
  private readonly byAnchor = new Map<string, Source>();
  private readonly numbers = new Map<string, number>();
  readonly cited: Cited[] = [];

  constructor(sources: Source[] = []) {
    for (const s of sources) if (s.anchor) this.byAnchor.set(anchorKey(s.anchor), s);
  }

  number(text: string): string {
    let out = (text ?? '').replace(/[\uE000\uE001]/g, '');
    out = out.replace(ANCHOR, (_m, key: string) => {
      const k = key.toLowerCase();
      let n = this.numbers.get(k);
      if (n === undefined) {
        n = this.numbers.size + 1;
        this.numbers.set(k, n);
        this.cited.push({ n, source: this.byAnchor.get(k) });
      }
      return SLOT_OPEN + n + SLOT_CLOSE;
    });
    return out.replace(OTHER_MARKS, '');
  }
}

/** Turns the numbered slots of rendered HTML into superscript links to the source list of the message. */
export function citeHTML(html: string, cited: Cited[], idPrefix: string): string {
  const known = new Set(cited.filter((c) => c.source).map((c) => c.n));
  return html.replace(SLOT, (_m, d: string) => {
    const n = Number(d);
    if (!known.has(n)) return `<sup class="cite">[${n}]</sup>`;
    return `<sup class="cite"><a href="#${idPrefix}-${n}" data-cite="${n}" aria-label="Source ${n}">[${n}]</a></sup>`;
  });
}

/** The sources to list under an answer: those cited, else all of them (unique), numbered. */
export function listedSources(cited: Cited[], sources: Source[] = []): Cited[] {
  const withSource = cited.filter((c) => c.source);
  if (withSource.length > 0 || cited.length > 0) return withSource;
  const seen = new Set<string>();
  const out: Cited[] = [];
  for (const s of sources) {
    const k = s.kind === 'web' ? `w:${s.url}` : `f:${s.file_id ?? s.file_name}:${s.page ?? ''}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push({ n: out.length + 1, source: s });
  }
  return out;
}

/** An address safe to link to: http(s) only. */
export function safeURL(url?: string): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : undefined;
  } catch {
    return undefined;
  }
}

// ---- The answer built from a run's events -------------------------------

/** A run's event, decoded. */
export interface RunEvent {
  id: number;
  type: string;
  data: any;
}

export function decodeEvent(e: SSEvent): RunEvent | null {
  try {
    return { id: Number(e.id) || 0, type: e.event, data: JSON.parse(e.data) };
  } catch {
    return null;
  }
}

/**
 * Applies one event to the parts of an answer being written: text goes to the
 * last part of its agent when that is text (agents running side by side each
 * grow their own), tool calls start and finish by id, a server's question is
 * a part of its own (answered in the run runId) until elicitation.answered
 * closes it.
 */
export function applyEvent(parts: Part[], ev: RunEvent, runId = '') {
  const d = ev.data ?? {};
  switch (ev.type) {
    case 'elicitation.requested':
      if (parts.some((x) => x.question?.id === d.id)) return;
      parts.push({ type: 'elicitation', agent_id: d.agent_id, question: { ...d, mode: d.mode === 'url' ? 'url' : 'form', run_id: runId } });
      return;
    case 'elicitation.answered': {
      const q = parts.find((x) => x.question?.id === d.id)?.question;
      if (q) {
        q.action = d.action;
        q.reason = d.reason;
      }
      return;
    }
    case 'message.delta': {
      if (!d.text) return;
      let last: Part | undefined;
      for (let i = parts.length - 1; i >= 0; i--) {
        if ((parts[i].agent_id ?? '') === (d.agent_id ?? '')) {
          last = parts[i];
          break;
        }
      }
      if (last && last.type === 'text') last.text = (last.text ?? '') + d.text;
      else parts.push({ type: 'text', agent_id: d.agent_id, text: d.text });
      return;
    }
    case 'tool.started':
      parts.push({
        type: 'tool_call',
        agent_id: d.agent_id,
        tool: { id: d.id, name: d.name, arguments: d.arguments ?? '', result: '', is_error: false, running: true },
      });
      return;
    case 'tool.finished': {
      const p = parts.find((x) => x.type === 'tool_call' && x.tool?.id === d.id);
      if (p?.tool) {
        p.tool.result = d.result ?? '';
        p.tool.is_error = !!d.is_error;
        p.tool.duration_ms = d.duration_ms;
        p.tool.running = false;
      }
      return;
    }
    case 'message.image':
      parts.push({ type: 'image', agent_id: d.agent_id, mime_type: d.mime_type, data: d.data });
      return;
    case 'error':
      parts.push({ type: 'error', agent_id: d.agent_id, text: d.message });
      return;
  }
}

// ---- Following a run -----------------------------------------------------

export interface FollowHandlers {
  /** Each event, in order, once. */
  onEvent(ev: RunEvent): void;
  /** The stream was lost and is tried again after delay ms (attempt 1, 2, …); 0 when it is back. */
  onRetry(attempt: number, delay: number): void;
}

/** Waits ms, or until signal aborts or the browser comes back online. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      window.removeEventListener('online', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    window.addEventListener('online', done);
    signal.addEventListener('abort', done);
  });
}

// A stream with nothing on it for this long (Relay sends a heartbeat every
// 15 s) is taken for lost and opened again.
const STALL_MS = 45000;

/**
 * Reads a run's events until run.finished: first from res (the answer of
 * POST /api/chat) when given, then, whenever the stream is lost or stalls,
 * again from GET /api/runs/{id}/events with Last-Event-ID, waiting 1, 2, 4 …
 * 15 s between attempts (at once when the browser comes back online).
 * Returns the run.finished event, or null when signal aborts. A run that is
 * gone (404) ends with an ApiError.
 */
export async function followRun(
  runId: string,
  after: number,
  h: FollowHandlers,
  signal: AbortSignal,
  res?: Response,
): Promise<RunEvent | null> {
  let last = after;
  let attempt = 0;
  for (;;) {
    if (signal.aborted) return null;
    const stream = new AbortController();
    const stop = () => stream.abort();
    signal.addEventListener('abort', stop);
    let stall: ReturnType<typeof setTimeout> | undefined;
    const alive = () => {
      clearTimeout(stall);
      stall = setTimeout(stop, STALL_MS);
    };
    try {
      alive();
      if (!res) {
        res = await raw('GET', `/api/runs/${encodeURIComponent(runId)}/events`, undefined, {
          signal: stream.signal,
          headers: { Accept: 'text/event-stream', 'Last-Event-ID': String(last) },
        });
        if (attempt > 0) h.onRetry(0, 0);
        attempt = 0;
      }
      for await (const e of readEvents(res, stream.signal, alive)) {
        const ev = decodeEvent(e);
        if (!ev) continue;
        if (ev.id && ev.id <= last) continue;
        if (ev.id) last = ev.id;
        if (attempt > 0) h.onRetry(0, 0);
        attempt = 0;
        h.onEvent(ev);
        if (ev.type === 'run.finished') return ev;
      }
      if (signal.aborted) return null;
    } catch (e) {
      if (signal.aborted) return null;
      if (e instanceof ApiError && e.status !== 0 && e.status < 500 && e.status !== 429) throw e;
    } finally {
      clearTimeout(stall);
      signal.removeEventListener('abort', stop);
      stream.abort();
    }
    res = undefined;
    attempt++;
    const delay = Math.min(15000, 1000 * 2 ** (attempt - 1));
    h.onRetry(attempt, delay);
    await pause(delay, signal);
  }
}

/** What POST /api/chat takes. */
export interface ChatRequest {
  agent_id: string;
  text: string;
  conversation_id?: string;
  parent_message_id?: string;
  files?: string[];
  timezone?: string;
}

/** Starts a run: the response streams its events; the run id is in Relay-Run-Id. */
export async function startChat(req: ChatRequest, signal: AbortSignal): Promise<{ runId: string; res: Response }> {
  const res = await raw('POST', '/api/chat', req, { signal, headers: { Accept: 'text/event-stream' } });
  return { runId: res.headers.get('Relay-Run-Id') ?? '', res };
}

// ---- Runs to resume after a reload, and drafts (lib/tabstate.ts) ---------
export { loadActive, saveActive, loadDraft, saveDraft, moveDraft, type ActiveRun } from './tabstate';

// ---- Errors in plain words -----------------------------------------------

/** Says why a run or a request failed in words a person understands. */
export function plainError(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.code === 'quota_exceeded' || e.code === 'rate_limited') {
      const wait = e.retryAfter ? ` Try again in ${e.retryAfter < 120 ? `${e.retryAfter} s` : `${Math.ceil(e.retryAfter / 60)} min`}.` : '';
      return `You have reached a usage limit (${e.message.replace(/;.*$/, '').replace(/^(quota exceeded|rate limit):\s*/i, '')}).${wait}`;
    }
    if (e.status === 0) return 'Relay cannot be reached. Check your connection and try again.';
    if (e.status === 404) return 'This conversation or agent no longer exists, or is not yours.';
    return plainRunError(e.message);
  }
  return plainRunError(e instanceof Error ? e.message : String(e));
}

/** The message of a run's error event, said plainly. */
export function plainRunError(msg: string): string {
  const m = (msg ?? '').trim();
  if (/^context window:/i.test(m)) {
    return `This conversation is too long for the agent's model. Start a new chat, or edit an earlier message to shorten it. (${m.replace(/^context window:\s*/i, '')})`;
  }
  if (/aborted by the user|cancel/i.test(m)) return 'You stopped this answer.';
  if (/recursion|step limit|steps/i.test(m) && /limit/i.test(m)) return `The agent used all the steps it may take before finishing. (${m})`;
  return m || 'The answer failed.';
}

// ---- Uploads -------------------------------------------------------------

/**
 * Uploads a file as POST /api/files does (multipart field "file") and reports
 * the bytes sent in percent; resolves with the stored file, pending.
 */
export function uploadFile(file: File, onProgress: (pct: number) => void, signal?: AbortSignal): Promise<FileRec> {
  return upload<FileRec>('/api/files', file, (f) => onProgress(Math.round(f * 100)), signal);
}

/** Asks for a file until it is ready or failed, calling onUpdate with each answer. */
export async function watchFile(id: string, onUpdate: (f: FileRec) => void, signal: AbortSignal): Promise<FileRec | null> {
  let delay = 500;
  for (;;) {
    await pause(delay, signal);
    if (signal.aborted) return null;
    try {
      const f = await get<FileRec>(`/api/files/${encodeURIComponent(id)}`, { signal });
      onUpdate(f);
      if (f.status === 'ready' || f.status === 'failed') return f;
      delay = Math.min(2000, delay + 250);
    } catch (e) {
      if (signal.aborted) return null;
      if (e instanceof ApiError && e.status === 404) throw e;
      delay = Math.min(5000, delay * 2);
    }
  }
}

/** An answer's text for copying: its text parts, without citation anchors. */
export function answerText(parts: Part[]): string {
  return parts
    .filter((p) => p.type === 'text' && p.text)
    .map((p) => p.text!)
    .join('\n\n')
    .replace(ANCHOR, '')
    .replace(OTHER_MARKS, '')
    .trim();
}

/** How a live answer stands, for showing. */
export interface LiveView {
  status: 'starting' | 'streaming' | 'reconnecting' | 'failed';
  error?: string;
  retryIn?: number;
  stopping?: boolean;
}
