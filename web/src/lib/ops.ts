// What the operations pages share: the shapes of files, schedules, runs,
// keys, users and MCP servers as the API returns them (docs/api.md), and
// helpers for uploads with progress, downloads, cron in words and time zones.
import { ApiError, get, query, upload } from './api';

export interface FileItem {
  id: string;
  owner: string;
  name: string;
  mime_type: string;
  size: number;
  status: 'pending' | 'processing' | 'ready' | 'failed';
  progress?: number;
  chunk_count?: number;
  error?: string;
  note?: string;
  created_at: string;
  updated_at: string;
}

export interface Schedule {
  id: string;
  user_id: string;
  agent_id: string;
  name: string;
  prompt: string;
  type: 'recurring' | 'once';
  cron?: string;
  run_at?: string;
  timezone: string;
  enabled: boolean;
  notify_url?: string;
  next_run_at?: string;
  last_run_at?: string;
  last_status?: string;
  /** the agent's name, while its owner may use it */
  agent_name?: string;
  created_at: string;
  updated_at: string;
}

export type FiringStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'skipped';

export interface Firing {
  id: string;
  schedule_id: string;
  fire_at: string;
  run_id?: string;
  conversation_id?: string;
  prompt: string;
  status: FiringStatus;
  error?: string;
  claimed_by?: string;
  started_at?: string;
  finished_at?: string;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface Run {
  id: string;
  user_id: string;
  agent_id: string;
  conversation_id: string;
  user_message_id: string;
  response_message_id?: string;
  status: RunStatus;
  error?: string;
  usage: Usage;
  created_at: string;
  started_at?: string;
  finished_at?: string;
  /** the first words of the user's message (runs list) */
  text?: string;
  /** the schedule whose firing started the run (runs list) */
  schedule_id?: string;
}

export interface RunEvent {
  run_id: string;
  seq: number;
  type: string;
  data: any;
  created_at: string;
}

export interface ModelRequest {
  run_id: string;
  seq: number;
  agent_id: string;
  body: unknown;
  sent_at: string;
  /** when the answer ended or failed (absent from runs stored by an older Relay) */
  finished_at?: string;
  usage?: Usage;
  /** 'summary' on the request that summarised turns the agent's request dropped to fit its context window */
  purpose?: 'summary';
}

export interface ToolCallRecord {
  run_id: string;
  agent_id: string;
  id: string;
  name: string;
  arguments: string;
  result: string;
  is_error: boolean;
  /** nanoseconds (Go's time.Duration) */
  duration: number;
  step: number;
  created_at: string;
  started_at?: string;
  finished_at?: string;
  duration_ms?: number;
}

export interface RunDetail extends Run {
  events: RunEvent[];
  requests: ModelRequest[];
  tool_calls: ToolCallRecord[];
  /** the run's agents, its own first, with names when the caller may still see them */
  agents?: { id: string; name?: string }[];
}

export interface Agent {
  id: string;
  name?: string;
  description?: string;
  provider?: string;
  model?: string;
}

export interface ApiKey {
  id: string;
  name: string;
  user_id?: string;
  prefix?: string;
  created_at?: string;
  last_used_at?: string;
  revoked_at?: string;
  secret?: string;
}

export interface MCPServer {
  name: string;
  transport: string;
  scope: 'app' | 'user';
  state: 'disconnected' | 'connecting' | 'connected' | 'error';
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
  input_schema?: unknown;
}

export interface Group {
  id: string;
  name: string;
  /** admins only; absent when the group has no members */
  member_ids: string[];
  created_at?: string;
}

/** A list answer: `{data, next_cursor}`. */
export interface Page<T> {
  data: T[];
  next_cursor?: string;
}

const FINAL = new Set(['succeeded', 'failed', 'cancelled', 'skipped']);

/** Whether a run or firing status is still moving. */
export function isLive(status?: string): boolean {
  return !!status && !FINAL.has(status);
}

/** A one-off schedule that has fired: it turned itself off and has nothing left to do. */
export function isDone(s: Schedule): boolean {
  return s.type === 'once' && !s.enabled && !!s.run_at && Date.parse(s.run_at) <= Date.now() && !!(s.last_status || s.last_run_at);
}

/** Every agent the caller may see, for pickers and names (id → agent). */
export async function loadAgents(): Promise<Agent[]> {
  const all: Agent[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 20; i++) {
    const page = await get<Page<Agent>>(`/api/agents${query({ limit: 1000, cursor })}`);
    all.push(...(page.data ?? []));
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return all;
}

/** An agent's name for people, its id when it has none. */
export function agentName(agents: Agent[] | Map<string, Agent>, id?: string): string {
  if (!id) return '';
  const a = agents instanceof Map ? agents.get(id) : agents.find((x) => x.id === id);
  return a?.name || id;
}

/** Uploads one file (POST /api/files), reporting the part sent (0–1). */
export function uploadFile(file: File, onProgress: (fraction: number) => void, signal?: AbortSignal): Promise<FileItem> {
  return upload<FileItem>('/api/files', file, onProgress, signal);
}

/** What an upload's refusal means, in words. */
export function uploadErrorText(e: unknown, file: File): string {
  if (e instanceof ApiError) {
    if (e.status === 413) return `${file.name} is larger than this server accepts. ${e.message}`;
    if (e.status === 429 && e.code === 'quota_exceeded') return `Your file storage is full: ${e.message}. Delete files you no longer need, then try again.`;
    if (e.status === 429) return `Too many requests: ${e.message}`;
    if (e.status === 401) return 'Your session has ended. Sign in again to upload.';
    return e.message;
  }
  return (e as Error)?.message ?? String(e);
}

/** Saves a Blob as a download with the given file name. */
export function downloadBlob(blob: Blob, name: string) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.rel = 'external';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** YYYYMMDD of a date, local time. */
export function ymd(d = new Date()): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}`;
}


// ---- Cron in words -------------------------------------------------------

/** Presets offered under the cron field. */
export const cronPresets: { label: string; cron: string }[] = [
  { label: 'Every weekday at 7:00', cron: '0 7 * * 1-5' },
  { label: 'Every day at 9:00', cron: '0 9 * * *' },
  { label: 'Every Monday at 8:00', cron: '0 8 * * 1' },
  { label: 'On the 1st of each month at 9:00', cron: '0 9 1 * *' },
  { label: 'Every hour', cron: '0 * * * *' },
];

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const DAY_NAMES: Record<string, number> = { SUN: 0, MON: 1, TUE: 2, WED: 3, THU: 4, FRI: 5, SAT: 6 };

function dayNumber(s: string): number | null {
  const up = s.toUpperCase();
  if (up in DAY_NAMES) return DAY_NAMES[up];
  if (/^[0-7]$/.test(s)) return Number(s) % 7;
  return null;
}

function ordinal(n: number): string {
  const s = ['th', 'st', 'nd', 'rd'];
  const v = n % 100;
  return n + (s[(v - 20) % 10] || s[v] || s[0]);
}

/**
 * A cron expression in words when it is a simple one ("Every weekday at
 * 07:00"), else null: the caller shows it as written.
 */
export function describeCron(expr?: string): string | null {
  if (!expr) return null;
  const f = expr.trim().split(/\s+/);
  if (f.length !== 5) return null;
  const [min, hour, dom, mon, dow] = f;
  const num = (s: string, max: number) => (/^\d{1,2}$/.test(s) && Number(s) <= max ? Number(s) : null);
  const m = num(min, 59);
  const h = num(hour, 23);
  const at = m !== null && h !== null ? `at ${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}` : null;
  const step = (s: string) => {
    const x = /^\*\/(\d{1,2})$/.exec(s);
    return x ? Number(x[1]) : null;
  };
  if (mon !== '*') return null;
  // Every N minutes / every hour.
  if (hour === '*' && dom === '*' && dow === '*') {
    const sm = step(min);
    if (sm) return sm === 1 ? 'Every minute' : `Every ${sm} minutes`;
    if (m === 0) return 'Every hour, on the hour';
    if (m !== null) return `Every hour at ${m} minute${m === 1 ? '' : 's'} past`;
    return null;
  }
  if (m !== null && dom === '*' && dow === '*') {
    const sh = step(hour);
    if (sh) return `Every ${sh} hours, at ${m} minute${m === 1 ? '' : 's'} past`;
  }
  if (!at) return null;
  if (dom === '*' && dow === '*') return `Every day ${at}`;
  if (dom === '*') {
    const d = dow.toUpperCase();
    if (d === '1-5' || d === 'MON-FRI') return `Every weekday ${at}`;
    if (d === '0,6' || d === '6,0' || d === 'SAT,SUN' || d === 'SUN,SAT') return `Every Saturday and Sunday ${at}`;
    const parts = dow.split(',').map(dayNumber);
    if (parts.every((p) => p !== null)) {
      const names = parts.map((p) => DAYS[p!]);
      const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
      return `Every ${list} ${at}`;
    }
    return null;
  }
  if (dow === '*') {
    const d = num(dom, 31);
    if (d !== null && d >= 1) return `On the ${ordinal(d)} of every month ${at}`;
  }
  return null;
}

// ---- Time zones ----------------------------------------------------------

let zones: string[] | null = null;

// The current IANA names of zones that browsers list under an older name
// (Chromium lists Asia/Calcutta, not Asia/Kolkata). Relay's server, Go's time
// package, knows both.
const renamedZones = [
  'Africa/Asmara',
  'America/Argentina/Buenos_Aires',
  'America/Argentina/Catamarca',
  'America/Argentina/Cordoba',
  'America/Argentina/Jujuy',
  'America/Argentina/Mendoza',
  'America/Atikokan',
  'America/Indiana/Indianapolis',
  'America/Kentucky/Louisville',
  'America/Nuuk',
  'Asia/Ho_Chi_Minh',
  'Asia/Kathmandu',
  'Asia/Kolkata',
  'Asia/Yangon',
  'Atlantic/Faroe',
  'Europe/Kyiv',
  'Pacific/Chuuk',
  'Pacific/Kanton',
  'Pacific/Pohnpei',
];

/** Whether this browser can show times in the zone. */
function browserKnows(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The IANA time zones this browser knows, with UTC and the current names of renamed zones. */
export function timeZones(): string[] {
  if (zones) return zones;
  let list: string[] = [];
  try {
    list = (Intl as any).supportedValuesOf?.('timeZone') ?? [];
  } catch {
    list = [];
  }
  const all = new Set(list);
  for (const z of renamedZones) if (browserKnows(z)) all.add(z);
  all.delete('UTC');
  zones = ['UTC', ...[...all].sort()];
  return zones;
}

// The shape of an IANA zone name (Europe/Amsterdam, America/Argentina/Cordoba,
// Etc/GMT+5, UTC): what the browser also takes, an offset such as +05:00 or a
// name in other letter case, the server does not.
const ZONE_NAME = /^[A-Z][A-Za-z0-9_+-]*(?:\/[A-Z][A-Za-z0-9_+-]*)*$/;

/**
 * Whether zone is a time zone a schedule can have: one of timeZones(), or any
 * other IANA name the browser knows (an alias it does not list).
 */
export function isTimeZone(zone: string): boolean {
  if (timeZones().includes(zone)) return true;
  return ZONE_NAME.test(zone) && browserKnows(zone);
}

function zoneOffsetMs(utcMs: number, timeZone: string): number {
  const dtf = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const p: Record<string, number> = {};
  for (const part of dtf.formatToParts(new Date(utcMs))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  const asUTC = Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second);
  return asUTC - Math.floor(utcMs / 1000) * 1000;
}

/**
 * The instant of a wall-clock time (a datetime-local value, "2025-11-25T07:00"
 * or with seconds) in a time zone, as an ISO string; null when unreadable.
 */
export function zonedToISO(local: string, timeZone: string): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?/.exec(local);
  if (!m) return null;
  const wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] ?? 0));
  try {
    let t = wall - zoneOffsetMs(wall, timeZone);
    // Once more, for a wall time near a change of offset (summer time).
    t = wall - zoneOffsetMs(t, timeZone);
    return new Date(t).toISOString();
  } catch {
    return null;
  }
}

/** The wall-clock time of an instant in a time zone, as a datetime-local value with seconds. */
export function isoToZoned(iso: string, timeZone: string): string {
  const t = new Date(iso).getTime();
  let off = 0;
  try {
    off = zoneOffsetMs(t, timeZone);
  } catch {
    off = -new Date(t).getTimezoneOffset() * 60000;
  }
  return new Date(t + off).toISOString().slice(0, 19);
}

/** A time in a zone, with the zone's short name ("Tue, 25 Nov 2025, 07:00 CET"). */
export function zonedTime(iso?: string | null, timeZone?: string): string {
  if (!iso) return '';
  try {
    return new Date(iso).toLocaleString(undefined, {
      weekday: 'short',
      day: 'numeric',
      month: 'short',
      year: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      timeZone,
      timeZoneName: 'short',
    });
  } catch {
    return new Date(iso).toLocaleString();
  }
}
