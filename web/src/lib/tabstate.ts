// What the chat keeps in this tab's sessionStorage: the runs being followed,
// so that a reload picks them up, and the messages typed and not sent. It
// belongs to the person signed in (lib/session.svelte.ts forgets it at
// sign-out and when someone else signs in), and stays apart from lib/chat.ts
// so that the sign-in code does not load the chat's.
import type { Part } from './chat';

/** A run being followed, as kept in sessionStorage so that a reload picks it up. */
export interface ActiveRun {
  run_id: string;
  conversation_id: string;
  user_message_id: string;
  parent_message_id: string;
  agent_id: string;
  text: string;
  files: { id: string; name: string }[];
  last_event_id: number;
  parts: Part[];
}

const ACTIVE_KEY = 'relay.chat.runs';

export function loadActive(): ActiveRun[] {
  try {
    const v = JSON.parse(sessionStorage.getItem(ACTIVE_KEY) ?? '[]');
    return Array.isArray(v) ? v.filter((r) => r && typeof r.run_id === 'string' && r.run_id) : [];
  } catch {
    return [];
  }
}

export function saveActive(runs: ActiveRun[]) {
  try {
    if (runs.length === 0) sessionStorage.removeItem(ACTIVE_KEY);
    else sessionStorage.setItem(ACTIVE_KEY, JSON.stringify(runs));
  } catch {
    // storage full or blocked: a reload then replays the run from its start
  }
}

// A message typed and not sent yet, per conversation ('' is a new chat), kept
// in sessionStorage so that it is still there after going to another page
// and coming back, or a reload.
const DRAFT_KEY = 'relay.chat.draft.';

/** The draft of a conversation ('' for a new chat), or ''. */
export function loadDraft(conversation: string): string {
  try {
    return sessionStorage.getItem(DRAFT_KEY + conversation) ?? '';
  } catch {
    return '';
  }
}

/** Keeps the draft of a conversation; an empty one is forgotten. */
export function saveDraft(conversation: string, text: string) {
  try {
    if (text.trim()) sessionStorage.setItem(DRAFT_KEY + conversation, text);
    else sessionStorage.removeItem(DRAFT_KEY + conversation);
  } catch {
    // storage full or blocked: the draft lasts as long as the page
  }
}

// Whose drafts and followed runs this tab keeps: they are the signed-in
// person's alone, so they go at sign-out, and when someone else signs in
// after a session ended, on a computer people share.
const OWNER_KEY = 'relay.chat.owner';

/** Forgets every draft and followed run of this tab. */
export function forgetChatState() {
  try {
    for (const k of Object.keys(sessionStorage)) {
      if (k === ACTIVE_KEY || k === OWNER_KEY || k.startsWith(DRAFT_KEY)) sessionStorage.removeItem(k);
    }
  } catch {
    // storage blocked: nothing was kept
  }
}

/** Keeps this tab's drafts and followed runs for the person userID, forgetting another person's. */
export function claimChatState(userID: string) {
  try {
    if (sessionStorage.getItem(OWNER_KEY) === userID) return;
    forgetChatState();
    sessionStorage.setItem(OWNER_KEY, userID);
  } catch {
    // storage blocked: nothing is kept
  }
}

/** Moves the draft of a new chat to the conversation it became. */
export function moveDraft(from: string, to: string) {
  const text = loadDraft(from);
  saveDraft(from, '');
  if (text) saveDraft(to, text);
}
