// The one way the UI talks to Relay: its documented JSON API (docs/api.md),
// with the session cookie. Errors come back as ApiError carrying Relay's
// error code, message and per-field problems, so a page can show each where
// it happened.

export interface FieldError {
  field: string;
  message: string;
}

export class ApiError extends Error {
  status: number;
  code: string;
  fields: FieldError[];
  retryAfter?: number;
  constructor(status: number, code: string, message: string, fields: FieldError[] = [], retryAfter?: number) {
    super(message);
    this.status = status;
    this.code = code;
    this.fields = fields;
    this.retryAfter = retryAfter;
  }
  /** The message for one field, if the server named it. */
  field(name: string): string | undefined {
    return this.fields.find((f) => f.field === name)?.message;
  }
}

type Unauthorized = () => void;
let onUnauthorized: Unauthorized = () => {};

/** Sets what happens when a request is refused for want of a session (sign-in page). */
export function setUnauthorizedHandler(fn: Unauthorized) {
  onUnauthorized = fn;
}

/** Turns a failed response into an ApiError with words a person understands. */
export async function errorFrom(res: Response): Promise<ApiError> {
  let code = 'internal';
  let message = `The server answered ${res.status} ${res.statusText}.`;
  let fields: FieldError[] = [];
  try {
    const body = await res.json();
    if (body?.error) {
      code = body.error.code ?? code;
      message = body.error.message ?? message;
      fields = body.error.fields ?? [];
    }
  } catch {
    // not JSON: keep the status line
  }
  if (res.status === 0 || res.status === 502 || res.status === 504) {
    message = 'Relay cannot be reached. Check your connection and try again.';
  }
  const ra = Number(res.headers.get('Retry-After'));
  return new ApiError(res.status, code, message, fields, Number.isFinite(ra) && ra > 0 ? ra : undefined);
}

export interface RequestOptions {
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Do not send to the sign-in page on 401 (the sign-in page itself). */
  quiet401?: boolean;
}

/** Sends a request and returns the raw response when it succeeded (2xx). */
export async function raw(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  let payload: BodyInit | undefined;
  if (body instanceof FormData) {
    payload = body;
  } else if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let res: Response;
  try {
    res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin', signal: opts.signal });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'Relay cannot be reached. Check your connection and try again.');
  }
  if (!res.ok) {
    const err = await errorFrom(res);
    if (res.status === 401 && !opts.quiet401) onUnauthorized();
    throw err;
  }
  return res;
}

/** Sends a JSON request and decodes the JSON answer (undefined for 204). */
export async function api<T = unknown>(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
  const res = await raw(method, path, body, opts);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T>(path: string, opts?: RequestOptions) => api<T>('GET', path, undefined, opts);
export const post = <T>(path: string, body?: unknown, opts?: RequestOptions) => api<T>('POST', path, body, opts);
export const patch = <T>(path: string, body?: unknown, opts?: RequestOptions) => api<T>('PATCH', path, body, opts);
export const put = <T>(path: string, body?: unknown, opts?: RequestOptions) => api<T>('PUT', path, body, opts);
export const del = <T>(path: string, opts?: RequestOptions) => api<T>('DELETE', path, undefined, opts);

/**
 * Uploads a file as multipart/form-data (field `file`) to path, reporting the
 * part sent (0–1) to onProgress. fetch has no upload progress, so this uses
 * XMLHttpRequest; refusals come back as ApiError like every other request.
 */
export function upload<T>(path: string, file: File, onProgress?: (fraction: number) => void, signal?: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.withCredentials = true;
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable && e.total > 0) onProgress?.(e.loaded / e.total);
    };
    xhr.onload = async () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress?.(1);
        try {
          resolve(JSON.parse(xhr.responseText));
        } catch {
          reject(new ApiError(xhr.status, 'internal', 'The server sent an answer that could not be read.'));
        }
        return;
      }
      const headers = new Headers();
      const ra = xhr.getResponseHeader('Retry-After');
      if (ra) headers.set('Retry-After', ra);
      const err = await errorFrom(new Response(xhr.responseText || null, { status: xhr.status, statusText: xhr.statusText, headers }));
      if (xhr.status === 401) onUnauthorized();
      reject(err);
    };
    xhr.onerror = () => reject(new ApiError(0, 'network', 'The upload was cut off: Relay cannot be reached. Check your connection and try again.'));
    xhr.onabort = () => reject(new DOMException('The upload was cancelled.', 'AbortError'));
    signal?.addEventListener('abort', () => xhr.abort());
    const form = new FormData();
    form.append('file', file, file.name);
    xhr.send(form);
  });
}

/** Builds a query string from the defined values. */
export function query(params: Record<string, string | number | boolean | undefined | null | string[]>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) v.forEach((x) => q.append(k, x));
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** A message for anything thrown, for showing to a person. */
export function messageOf(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}
