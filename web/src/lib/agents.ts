// Agents as the API has them (docs/api.md "Agents"), the calls the agents
// pages make, and the small pure helpers of the builder: the patch of unsaved
// edits, a line diff of two versions, and the header of a prompt preview.
import { get, post, patch, put, del, raw, query, ApiError, type RequestOptions } from './api';
import { session } from './session.svelte';

export type EdgeType = 'handoff' | 'direct';
export type Permission = 'owner' | 'editor' | 'viewer';

/** An edge an agent defines: `from`/`to` are an id or a list, kept in the form given. */
export interface Edge {
  from: string | string[];
  to: string | string[];
  edgeType?: EdgeType;
  prompt?: string;
  excludeResults?: boolean;
  promptKey?: string;
  description?: string;
}

/** The fields of an agent a client sets (internal/agent/agent.go Spec). */
export interface Spec {
  name?: string;
  description?: string;
  instructions?: string;
  provider: string;
  model: string;
  model_parameters?: Record<string, unknown>;
  tools?: string[];
  artifacts?: string;
  tool_resources?: { file_search?: { file_ids: string[] } };
  edges?: Edge[];
  agent_ids?: string[];
  chain_type?: string;
  hide_sequential_outputs?: boolean;
  recursion_limit?: number;
  conversation_starters?: string[];
  shared: boolean;
}

/** The keys of Spec, in the order the API documents them. */
export const SPEC_KEYS: (keyof Spec)[] = [
  'name', 'description', 'instructions', 'provider', 'model', 'model_parameters', 'tools', 'artifacts',
  'tool_resources', 'edges', 'agent_ids', 'chain_type', 'hide_sequential_outputs', 'recursion_limit',
  'conversation_starters', 'shared',
];

export interface Agent extends Spec {
  id: string;
  author?: string;
  managed?: boolean;
  version: number;
  created_at: string;
  updated_at: string;
  /** The caller's permission on it (absent from servers without sharing). */
  permission?: Permission;
}

export interface Version {
  agent_id: string;
  version: number;
  spec: Spec;
  created_at: string;
}

/** An edge of a resolved graph (internal/graph): lists on both sides. */
export interface GraphEdge {
  from: string[];
  to: string[];
  type: EdgeType;
  prompt?: string;
  excludeResults?: boolean;
  promptKey?: string;
  description?: string;
  passthrough?: boolean;
  origin: string;
}

export interface Graph {
  agents: { id: string; name?: string }[];
  graph: {
    primary: string;
    order: string[];
    edges: GraphEdge[];
    start: string[];
    groups: string[][];
    warnings?: string[];
  };
}

export interface Share {
  principal_type: 'user' | 'group';
  principal_id: string;
  name?: string;
  email?: string;
  role: Permission;
}

/** A user or group found by GET /api/principals. */
export interface Principal {
  type: 'user' | 'group';
  id: string;
  name: string;
  email?: string;
}

export interface RelayConfig {
  providers: { name: string; models: string[] }[];
  tools: { name: string; description?: string }[];
  placeholders: { name: string; description?: string }[];
  features?: Record<string, boolean>;
  version?: string;
}

export interface MCPServer {
  name: string;
  transport: string;
  scope: string;
  state: 'disconnected' | 'connecting' | 'connected' | 'error' | string;
  tool_count: number;
  last_error?: string;
  connected_since?: string;
  connections: number;
}

export interface MCPTool {
  key: string;
  server: string;
  name: string;
  title?: string;
  description: string;
}

export interface FileInfo {
  id: string;
  name: string;
  mime_type: string;
  size: number;
  status: string;
  progress?: number;
  error?: string;
  created_at: string;
}

const enc = encodeURIComponent;

// ---- Calls -----------------------------------------------------------------

/** One page of the agents the caller may use. */
export const listAgents = (cursor?: string, limit = 100) =>
  get<{ data: Agent[]; next_cursor?: string }>(`/api/agents${query({ cursor, limit })}`);

/** Every agent the caller may use (all pages). */
export async function allAgents(): Promise<Agent[]> {
  const out: Agent[] = [];
  let cursor: string | undefined;
  do {
    const page = await listAgents(cursor, 1000);
    out.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return out;
}

export const getAgent = (id: string) => get<Agent>(`/api/agents/${enc(id)}`);
export const createAgent = (body: Partial<Spec> & { id?: string }) => post<Agent>('/api/agents', body);
export const patchAgent = (id: string, body: Record<string, unknown>) => patch<Agent>(`/api/agents/${enc(id)}`, body);
export const deleteAgent = (id: string) => del<void>(`/api/agents/${enc(id)}`);
export const agentVersions = (id: string) => get<{ data: Version[] }>(`/api/agents/${enc(id)}/versions`);
export const restoreVersion = (id: string, version: number) =>
  post<Agent>(`/api/agents/${enc(id)}/versions/${version}/restore`);
export const agentGraph = (id: string, opts?: RequestOptions) => get<Graph>(`/api/agents/${enc(id)}/graph`, opts);
export const agentShares = (id: string) => get<{ data: Share[] }>(`/api/agents/${enc(id)}/shares`);
export const saveShares = (id: string, shares: Pick<Share, 'principal_type' | 'principal_id' | 'role'>[]) =>
  put<{ data: Share[] }>(`/api/agents/${enc(id)}/shares`, { shares });
export const mcpServers = () => get<{ data: MCPServer[] }>('/api/mcp/servers');
export const mcpTools = (server: string) => get<{ data: MCPTool[] }>(`/api/mcp/servers/${enc(server)}/tools`);
export const reconnectMCP = (server: string) => post<MCPServer>(`/api/mcp/servers/${enc(server)}/reconnect`);
export const myFiles = () => get<{ data: FileInfo[] }>('/api/files');

/** Uploads a file for file_search; it is ingested in the background. */
export function uploadFile(file: File): Promise<FileInfo> {
  const form = new FormData();
  form.append('file', file);
  return post<FileInfo>('/api/files', form);
}

/** Users and groups whose name or email holds q, whatever shape the server lists them in. */
export async function findPrincipals(q: string, signal?: AbortSignal): Promise<Principal[]> {
  const res = await get<any>(`/api/principals${query({ q })}`, { signal });
  const out: Principal[] = [];
  const user = (u: any): Principal => ({ type: 'user', id: u.id, name: u.display_name || u.name || u.email, email: u.email });
  const group = (g: any): Principal => ({ type: 'group', id: g.id, name: g.name });
  if (Array.isArray(res?.data)) {
    for (const p of res.data) {
      const t = p.type ?? p.principal_type ?? (p.email ? 'user' : 'group');
      out.push(t === 'group' ? group(p) : user(p));
    }
  }
  for (const u of res?.users ?? []) out.push(user(u));
  for (const g of res?.groups ?? []) out.push(group(g));
  return out;
}

let configCache: Promise<RelayConfig> | null = null;

/** What the server offers: providers and models, built-in tools, placeholders. Cached per page load. */
export function relayConfig(): Promise<RelayConfig> {
  configCache ??= get<Partial<RelayConfig>>('/api/config')
    .then((c) => ({
      providers: c.providers ?? [],
      tools: c.tools ?? [],
      placeholders: c.placeholders ?? [],
      features: c.features,
      version: c.version,
    }))
    .catch((e) => {
      configCache = null;
      throw e;
    });
  return configCache;
}

/** What the server lists when GET /api/config cannot be read: the built-ins of docs/api.md. */
export const FALLBACK_CONFIG: RelayConfig = {
  providers: [],
  tools: [
    { name: 'file_search', description: 'Searches the files given to the agent.' },
    { name: 'web_search', description: 'Searches the web.' },
  ],
  placeholders: [
    { name: '{{current_date}}', description: "Today's date in the user's time zone." },
    { name: '{{current_datetime}}', description: "The date and time in the user's time zone." },
    { name: '{{iso_datetime}}', description: 'The date and time in UTC (ISO 8601).' },
    { name: '{{current_user}}', description: "The user's display name." },
  ],
};

/** A preview of the request the model will see. */
export interface Preview {
  body: unknown;
  warnings: string[];
  context: Record<string, string>;
}

/** Asks for the request body for a sample message, with unsaved edits when given. */
export async function previewPrompt(id: string, text: string, spec: Record<string, unknown> | null, signal?: AbortSignal): Promise<Preview> {
  const body: Record<string, unknown> = { text, timezone: Intl.DateTimeFormat().resolvedOptions().timeZone };
  if (spec && Object.keys(spec).length > 0) body.spec = spec;
  const res = await raw('POST', `/api/agents/${enc(id)}/prompt`, body, { signal });
  const text2 = await res.text();
  const warnings = splitWarnings(res.headers.get('Relay-Warning'));
  return { body: text2 ? JSON.parse(text2) : null, warnings, context: parseContext(res.headers.get('Relay-Context')) };
}

// How each Relay-Warning begins (internal/run/prepare.go, internal/graph): the
// browser joins repeated headers with ", ", which the messages hold too.
const WARNING_START = /, (?=MCP server |tool |server |provider |agent |agent_ids\[|no agent |handoff edge |direct edge )/;

/** The Relay-Warning headers of a response, which the browser joined into one. */
export function splitWarnings(header: string | null): string[] {
  if (!header) return [];
  return header
    .split(WARNING_START)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Reads a Relay-Context header: `key=value` pairs separated by `; `, values possibly quoted. */
export function parseContext(header: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  const re = /([A-Za-z_]+)=("(?:[^"\\]|\\.)*"|[^;]*)/g;
  for (const m of header.matchAll(re)) {
    let v = m[2].trim();
    if (v.startsWith('"')) v = v.slice(1, -1).replace(/\\(.)/g, '$1');
    out[m[1]] = v;
  }
  return out;
}

// ---- Permissions -------------------------------------------------------------

/** The caller's permission on an agent; servers without sharing leave it out, so it is worked out. */
export function permissionOf(a: Agent): Permission {
  if (a.permission) return a.permission;
  const me = session.user;
  if (me && (me.role === 'admin' || (a.author && a.author === me.id))) return 'owner';
  return 'viewer';
}

/** Whether the caller may change the agent (not a config agent, editor or owner). */
export function canEdit(a: Agent): boolean {
  return !a.managed && permissionOf(a) !== 'viewer';
}

/** Whether the caller may change whom the agent is shared with (owners; for config agents, admins). */
export function canShare(a: Agent): boolean {
  return permissionOf(a) === 'owner';
}

/** Whether the caller may delete the agent (owners; config agents never). */
export function canDelete(a: Agent): boolean {
  return !a.managed && permissionOf(a) === 'owner';
}

// ---- Edits -------------------------------------------------------------------

/** A value with empties removed: '', [], {} and undefined are "not set". */
export function normal(v: unknown): unknown {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (Array.isArray(v)) return v.length === 0 ? undefined : v.map(normal);
  if (typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v as object).sort()) {
      const x = normal((v as Record<string, unknown>)[k]);
      if (x !== undefined) o[k] = x;
    }
    return Object.keys(o).length === 0 ? undefined : o;
  }
  return v;
}

/** Whether two values are the same once empties are removed. */
export function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(normal(a)) === JSON.stringify(normal(b));
}

/**
 * The PATCH body taking `saved` to `draft`: only the fields that changed,
 * `null` for a field that was cleared, `false` for a switch turned off.
 */
export function changes(saved: Partial<Spec>, draft: Partial<Spec>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of SPEC_KEYS) {
    const a = saved[k];
    const b = draft[k];
    if (typeof b === 'boolean' || typeof a === 'boolean') {
      if (Boolean(a) !== Boolean(b)) out[k] = Boolean(b);
      continue;
    }
    if (same(a, b)) continue;
    const v = normal(b);
    out[k] = v === undefined ? null : b;
  }
  return out;
}

/** The body of a create: the fields that are set. */
export function creation(draft: Partial<Spec>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of SPEC_KEYS) {
    const v = draft[k];
    if (typeof v === 'boolean') {
      if (v) out[k] = v;
      continue;
    }
    if (normal(v) !== undefined) out[k] = v;
  }
  out.shared = Boolean(draft.shared);
  return out;
}

/** The ids of one side of an edge. */
export function ids(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** One id as a string, several as a list: the form the API keeps. */
export function side(list: string[]): string | string[] {
  return list.length === 1 ? list[0] : list;
}

/** The messages of an ApiError whose field is `name` or lies under it (`edges[0]` → `edges[0].to`). */
export function fieldErrors(err: unknown, name: string): string[] {
  if (!(err instanceof ApiError)) return [];
  return err.fields
    .filter((f) => f.field === name || f.field.startsWith(name + '.') || f.field.startsWith(name + '['))
    .map((f) => (f.field === name ? f.message : `${f.field.slice(name.length).replace(/^\./, '')}: ${f.message}`));
}

/** Inserts text into a textarea's value at its cursor, returning the value and where the cursor goes. */
export function insertAt(value: string, start: number, end: number, text: string): { value: string; cursor: number } {
  return { value: value.slice(0, start) + text + value.slice(end), cursor: start + text.length };
}

// ---- Diff ----------------------------------------------------------------------

export interface DiffLine {
  op: ' ' | '+' | '-';
  text: string;
  /** Line numbers in the old and new text (absent on the side that lacks it). */
  a?: number;
  b?: number;
}

/** A line diff of two texts by their longest common subsequence. */
export function diffLines(oldText: string, newText: string): DiffLine[] {
  const a = oldText.split('\n');
  const b = newText.split('\n');
  // Common head and tail are cheap and keep the table small.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  const n = am.length;
  const m = bm.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = am[i] === bm[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out: DiffLine[] = [];
  for (let k = 0; k < head; k++) out.push({ op: ' ', text: a[k], a: k + 1, b: k + 1 });
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && am[i] === bm[j]) {
      out.push({ op: ' ', text: am[i], a: head + i + 1, b: head + j + 1 });
      i++;
      j++;
    } else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out.push({ op: '+', text: bm[j], b: head + j + 1 });
      j++;
    } else {
      out.push({ op: '-', text: am[i], a: head + i + 1 });
      i++;
    }
  }
  for (let k = 0; k < tail; k++) {
    const ai = a.length - tail + k;
    const bi = b.length - tail + k;
    out.push({ op: ' ', text: a[ai], a: ai + 1, b: bi + 1 });
  }
  return out;
}

/** A diff cut to the changed lines and `context` lines around them; `null` marks a gap. */
export function hunks(lines: DiffLine[], context = 3): (DiffLine | null)[] {
  const keep = new Array<boolean>(lines.length).fill(false);
  lines.forEach((l, i) => {
    if (l.op === ' ') return;
    for (let k = Math.max(0, i - context); k <= Math.min(lines.length - 1, i + context); k++) keep[k] = true;
  });
  const out: (DiffLine | null)[] = [];
  let gap = false;
  lines.forEach((l, i) => {
    if (keep[i]) {
      if (gap && out.length > 0) out.push(null);
      gap = false;
      out.push(l);
    } else gap = true;
  });
  return out;
}

/** A spec as pretty JSON with its keys in a stable order, for diffs. */
export function prettySpec(s: Partial<Spec>): string {
  const ordered: Record<string, unknown> = {};
  for (const k of SPEC_KEYS) if (s[k] !== undefined) ordered[k] = s[k];
  for (const k of Object.keys(s).sort()) if (!(k in ordered)) ordered[k] = (s as Record<string, unknown>)[k];
  return JSON.stringify(ordered, null, 2);
}

// ---- Preview bodies ---------------------------------------------------------------

/** The system message of a provider's request body: OpenAI's, Anthropic's or Gemini's form. */
export function systemOf(body: any): string | null {
  if (!body || typeof body !== 'object') return null;
  const first = Array.isArray(body.messages) ? body.messages.find((m: any) => m?.role === 'system' || m?.role === 'developer') : null;
  const text = (c: any): string =>
    typeof c === 'string' ? c : Array.isArray(c) ? c.map((p: any) => (typeof p === 'string' ? p : (p?.text ?? ''))).join('') : '';
  if (first) return text(first.content);
  if (body.system) return text(body.system);
  const si = body.systemInstruction ?? body.system_instruction;
  if (si?.parts) return text(si.parts);
  return null;
}

/** The tool names of a provider's request body. */
export function toolNamesOf(body: any): string[] {
  const out: string[] = [];
  for (const t of Array.isArray(body?.tools) ? body.tools : []) {
    if (t?.function?.name) out.push(t.function.name);
    else if (t?.name) out.push(t.name);
    else if (Array.isArray(t?.functionDeclarations)) for (const f of t.functionDeclarations) if (f?.name) out.push(f.name);
  }
  return out;
}

/** The tool key of an MCP tool: `<tool>__mcp__<server>`. */
export const mcpKey = (tool: string, server: string) => `${tool}__mcp__${server}`;

/** The key that gives an agent every tool of a server. */
export const allKey = (server: string) => `all__mcp__${server}`;

// ---- A note that survives one navigation ----------------------------------------

let flash = '';

/** Keeps a note ("Agent created.") for the next page to show. */
export function setFlash(message: string) {
  flash = message;
}

/** The kept note, once. */
export function takeFlash(): string {
  const m = flash;
  flash = '';
  return m;
}
