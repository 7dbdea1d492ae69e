// Questions an MCP server asks the user in the middle of a tool call
// (docs/api.md "Questions"): the run's stream brings them as
// elicitation.requested and closes them with elicitation.answered; the user
// answers with POST /api/runs/{id}/elicitations/{eid}. A form question's
// requested_schema is a flat object of primitive fields (MCP's elicitation
// schema), which becomes one form field each.
import { post } from './api';

export type QuestionAction = 'accept' | 'decline' | 'cancel';

/** A question as the run's events tell it. */
export interface Question {
  id: string;
  run_id?: string;
  agent_id?: string;
  server?: string;
  tool_call_id?: string;
  mode: 'form' | 'url';
  message?: string;
  requested_schema?: Schema;
  url?: string;
  expires_at?: string;
  /** Set by elicitation.answered. */
  action?: QuestionAction;
  /** timeout or cancelled when Relay ended it. */
  reason?: string;
}

export interface Schema {
  type?: string;
  properties?: Record<string, Prop>;
  required?: string[];
}

interface Choice {
  const: string;
  title?: string;
}

export interface Prop {
  type?: string;
  title?: string;
  description?: string;
  format?: string;
  default?: unknown;
  enum?: string[];
  enumNames?: string[];
  oneOf?: Choice[];
  anyOf?: Choice[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  items?: { type?: string; enum?: string[]; anyOf?: Choice[]; oneOf?: Choice[] };
}

/** One field of a question's form. */
export interface Field {
  name: string;
  label: string;
  description?: string;
  required: boolean;
  kind: 'text' | 'email' | 'url' | 'date' | 'datetime' | 'number' | 'integer' | 'boolean' | 'select' | 'multi';
  options?: { value: string; label: string }[];
  min?: number;
  max?: number;
  minLength?: number;
  maxLength?: number;
}

function choices(values?: string[], names?: string[], titled?: Choice[]): { value: string; label: string }[] | undefined {
  if (titled?.length) return titled.map((c) => ({ value: String(c.const), label: c.title || String(c.const) }));
  if (values?.length) return values.map((v, i) => ({ value: String(v), label: names?.[i] || String(v) }));
  return undefined;
}

/** The fields of a form question, in the schema's order. */
export function fieldsOf(schema?: Schema): Field[] {
  const required = new Set(schema?.required ?? []);
  return Object.entries(schema?.properties ?? {}).map(([name, p]) => {
    const f: Field = { name, label: p.title?.trim() || name, description: p.description, required: required.has(name), kind: 'text' };
    const opts = choices(p.enum, p.enumNames, p.oneOf ?? p.anyOf);
    if (p.type === 'array') {
      f.kind = 'multi';
      f.options = choices(p.items?.enum, undefined, p.items?.anyOf ?? p.items?.oneOf) ?? [];
      f.min = p.minItems;
      f.max = p.maxItems;
    } else if (opts) {
      f.kind = 'select';
      f.options = opts;
    } else if (p.type === 'boolean') {
      f.kind = 'boolean';
    } else if (p.type === 'number' || p.type === 'integer') {
      f.kind = p.type;
      f.min = p.minimum;
      f.max = p.maximum;
    } else {
      f.kind = p.format === 'email' ? 'email' : p.format === 'uri' ? 'url' : p.format === 'date' ? 'date' : p.format === 'date-time' ? 'datetime' : 'text';
      f.minLength = p.minLength;
      f.maxLength = p.maxLength;
    }
    return f;
  });
}

/** What the form shows at first: the schema's defaults. */
export function initialValues(schema?: Schema): Record<string, any> {
  const out: Record<string, any> = {};
  for (const [name, p] of Object.entries(schema?.properties ?? {})) {
    if (p.type === 'array') out[name] = Array.isArray(p.default) ? p.default.map(String) : [];
    else if (p.type === 'boolean') out[name] = p.default === true;
    else out[name] = p.default == null ? '' : String(p.default);
  }
  return out;
}

/**
 * The content of an accepted answer, and the problems found before sending
 * (a required field left empty, a number that is not one). Empty optional
 * fields are left out, so that the server fills their defaults.
 */
export function contentOf(fields: Field[], values: Record<string, any>): { content: Record<string, unknown>; problems: Record<string, string> } {
  const content: Record<string, unknown> = {};
  const problems: Record<string, string> = {};
  for (const f of fields) {
    const v = values[f.name];
    if (f.kind === 'boolean') {
      content[f.name] = !!v;
      continue;
    }
    if (f.kind === 'multi') {
      const list = Array.isArray(v) ? v : [];
      if (list.length === 0 && !f.required) continue;
      if (list.length === 0) problems[f.name] = 'Choose at least one.';
      content[f.name] = list;
      continue;
    }
    const s = String(v ?? '').trim();
    if (s === '') {
      if (f.required) problems[f.name] = 'Required.';
      continue;
    }
    if (f.kind === 'number' || f.kind === 'integer') {
      const n = Number(s);
      if (!Number.isFinite(n) || (f.kind === 'integer' && !Number.isInteger(n))) {
        problems[f.name] = f.kind === 'integer' ? 'Give a whole number.' : 'Give a number.';
        continue;
      }
      content[f.name] = n;
      continue;
    }
    content[f.name] = s;
  }
  return { content, problems };
}

/** Sends the user's answer; Relay answers the question as it now stands. */
export function answerQuestion(runId: string, id: string, action: QuestionAction, content?: Record<string, unknown>): Promise<unknown> {
  const body: Record<string, unknown> = { action };
  if (action === 'accept' && content) body.content = content;
  return post(`/api/runs/${encodeURIComponent(runId)}/elicitations/${encodeURIComponent(id)}`, body);
}

/** How a closed question ended, in words. */
export function outcome(q: Pick<Question, 'action' | 'reason'>): string {
  if (q.reason === 'timeout') return 'Timed out';
  if (q.action === 'accept') return 'Answered';
  if (q.action === 'decline') return 'Declined';
  if (q.reason === 'cancelled') return 'Cancelled: the answer ended';
  return 'Cancelled';
}
