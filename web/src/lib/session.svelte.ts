// Who is signed in. The user comes from GET /api/me with the session cookie.
import { get, post, setUnauthorizedHandler } from './api';
import { navigate, location } from './router.svelte';
import { claimChatState, forgetChatState } from './tabstate';

export interface User {
  id: string;
  email: string;
  display_name: string;
  role: 'admin' | 'user';
  disabled?: boolean;
  has_password?: boolean;
  created_at: string;
}

class Session {
  user = $state<User | null>(null);
  loaded = $state(false);
  get isAdmin() {
    return this.user?.role === 'admin';
  }
}

export const session = new Session();

const PUBLIC = ['/signin', '/setup'];

/**
 * Makes u the person signed in. What the chat kept in this tab for someone
 * else (a draft not sent, a run being followed) is forgotten first.
 */
export function signedIn(u: User) {
  claimChatState(u.id);
  session.user = u;
}

/** Loads the signed-in user; false when there is none. */
export async function loadSession(): Promise<boolean> {
  try {
    signedIn(await get<User>('/api/me', { quiet401: true }));
  } catch {
    session.user = null;
  }
  session.loaded = true;
  return session.user !== null;
}

/** Sends the browser to the sign-in page, remembering where it was. */
export function toSignIn() {
  session.user = null;
  if (PUBLIC.includes(location.path)) return;
  const next = location.path + location.search;
  navigate(`/signin${next && next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`, { replace: true });
}

setUnauthorizedHandler(toSignIn);

/** Signs out of this browser. */
export async function signOut(everywhere = false) {
  try {
    await post(everywhere ? '/api/auth/logout-all' : '/api/auth/logout', undefined, { quiet401: true });
  } finally {
    forgetChatState();
    session.user = null;
    navigate('/signin', { replace: true });
  }
}
