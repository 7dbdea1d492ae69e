// What each user supplies themselves (docs/api.md "MCP accounts", "Endpoint
// keys"): their accounts at MCP servers (OAuth) and the values of servers'
// customUserVars, and their own keys and base URLs of endpoints. The API
// never answers a value, only whether it is set and since when.
import { ApiError, del, get, post, put } from './api';

export interface OAuthStatus {
  connected: boolean;
  expires_at?: string | null;
  scopes?: string[] | null;
  // The server asks for more than the user allowed (scopes): connect again.
  needs_permissions?: boolean;
}

export interface UserVar {
  name: string;
  title?: string;
  description?: string;
  set: boolean;
  updated_at?: string | null;
}

export interface Account {
  server: string;
  title?: string;
  oauth?: OAuthStatus | null;
  vars?: UserVar[] | null;
  ready: boolean;
}

export interface EndpointField {
  name: 'apiKey' | 'baseURL' | string;
  set: boolean;
  updated_at?: string | null;
}

export interface EndpointKey {
  endpoint: string;
  fields: EndpointField[];
}

const enc = encodeURIComponent;

export async function listAccounts(): Promise<Account[]> {
  return (await get<{ data: Account[] | null }>('/api/mcp/accounts')).data ?? [];
}

/** Sets the given values (an empty string removes that one) and answers the server's status. */
export function setVars(server: string, values: Record<string, string>): Promise<Account> {
  return put<Account>(`/api/mcp/servers/${enc(server)}/vars`, { values });
}

export function deleteVars(server: string): Promise<void> {
  return del(`/api/mcp/servers/${enc(server)}/vars`);
}

/** Starts the user's authorization at server: the address to send the browser to. */
export async function startOAuth(server: string): Promise<string> {
  return (await post<{ auth_url: string }>(`/api/mcp/servers/${enc(server)}/oauth`)).auth_url;
}

export function disconnectOAuth(server: string): Promise<void> {
  return del(`/api/mcp/servers/${enc(server)}/oauth`);
}

export async function listEndpointKeys(): Promise<EndpointKey[]> {
  return (await get<{ data: EndpointKey[] | null }>('/api/endpoints/keys')).data ?? [];
}

export function setEndpointKey(endpoint: string, values: Record<string, string>): Promise<EndpointKey> {
  return put<EndpointKey>(`/api/endpoints/${enc(endpoint)}/key`, values);
}

export function clearEndpointKey(endpoint: string): Promise<void> {
  return del(`/api/endpoints/${enc(endpoint)}/key`);
}

/** A server's name for people: its title, else its name. */
export function accountTitle(a: Account): string {
  return a.title?.trim() || a.server;
}

/**
 * The per-field problems of a refused save, keyed by field name: Relay names a
 * variable by itself (or, for a nested body, as values.NAME).
 */
export function fieldErrors(e: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (e instanceof ApiError) {
    for (const f of e.fields) out[f.field.replace(/^values\./, '')] = f.message;
  }
  return out;
}

/** Whether a tool result says the user must connect an account or give settings (docs/api.md "MCP accounts"). */
export function needsConnection(result?: string): boolean {
  return !!result && /needs you to connect your account|needs your settings/.test(result);
}
