// Reading server-sent events from a fetch response: POST /api/chat answers
// with a stream, which EventSource cannot send, and a resumed stream needs
// Last-Event-ID (docs/api.md "Chat and runs").

export interface SSEvent {
  id: string;
  event: string;
  data: string;
}

/**
 * Yields each event of an SSE body until it ends or signal aborts (which
 * cancels a read that is waiting). onData, when given, is called for every
 * piece of the body, heartbeat comments included: a sign the stream is alive.
 */
export async function* readEvents(res: Response, signal?: AbortSignal, onData?: () => void): AsyncGenerator<SSEvent> {
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const cancel = () => void reader.cancel().catch(() => {});
  signal?.addEventListener('abort', cancel);
  let buf = '';
  let ev: SSEvent = { id: '', event: 'message', data: '' };
  let hasData = false;
  try {
    for (;;) {
      if (signal?.aborted) return;
      const { value, done } = await reader.read();
      if (done) return;
      onData?.();
      buf += value;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        let line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (line === '') {
          if (hasData) yield ev;
          ev = { id: ev.id, event: 'message', data: '' };
          hasData = false;
          continue;
        }
        if (line.startsWith(':')) continue; // heartbeat comment
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? '' : line.slice(colon + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'id') ev.id = val;
        else if (field === 'event') ev.event = val;
        else if (field === 'data') {
          ev.data = hasData ? ev.data + '\n' + val : val;
          hasData = true;
        }
      }
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
    reader.releaseLock();
  }
}
