// Every page of the UI: its path pattern and the component, loaded when first
// visited so the first page stays small. `admin` pages are hidden from users.
import type { Component } from 'svelte';

export interface Route {
  pattern: string;
  load: () => Promise<{ default: Component<any> }>;
  title: string;
  public?: boolean;
  admin?: boolean;
}

// One loader for the paths of one page, so that going from one to the other
// (a new chat getting its id) keeps the page mounted (App.svelte).
const chat = () => import('./routes/Chat.svelte');

export const routes: Route[] = [
  { pattern: '/signin', load: () => import('./routes/SignIn.svelte'), title: 'Sign in', public: true },
  { pattern: '/setup', load: () => import('./routes/Setup.svelte'), title: 'Set up Relay', public: true },
  { pattern: '/', load: chat, title: 'Chat' },
  { pattern: '/c/:id', load: chat, title: 'Chat' },
  { pattern: '/agents', load: () => import('./routes/Agents.svelte'), title: 'Agents' },
  { pattern: '/agents/new', load: () => import('./routes/AgentBuilder.svelte'), title: 'New agent' },
  { pattern: '/agents/:id', load: () => import('./routes/AgentBuilder.svelte'), title: 'Agent' },
  { pattern: '/files', load: () => import('./routes/Files.svelte'), title: 'Files' },
  { pattern: '/schedules', load: () => import('./routes/Schedules.svelte'), title: 'Schedules' },
  { pattern: '/schedules/:id', load: () => import('./routes/Schedule.svelte'), title: 'Schedule' },
  { pattern: '/runs', load: () => import('./routes/Runs.svelte'), title: 'Runs' },
  { pattern: '/runs/:id', load: () => import('./routes/Run.svelte'), title: 'Run' },
  { pattern: '/memories', load: () => import('./routes/Memories.svelte'), title: 'Memories' },
  { pattern: '/connections', load: () => import('./routes/Connections.svelte'), title: 'Connections' },
  { pattern: '/settings', load: () => import('./routes/Settings.svelte'), title: 'Settings' },
  { pattern: '/admin/users', load: () => import('./routes/AdminUsers.svelte'), title: 'Users', admin: true },
  { pattern: '/admin/mcp', load: () => import('./routes/AdminMCP.svelte'), title: 'MCP servers', admin: true },
];
