import { createSubscriber } from 'svelte/reactivity';

// Formatting of times, sizes and durations for people.

const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/**
 * Relative times on the screen follow the clock: whatever shows one is
 * updated every 15 seconds while it is shown, and at once when the tab
 * comes back into view, so that "now" does not stay "now" for an hour.
 */
const clock = createSubscriber((update) => {
  const every = setInterval(update, 15_000);
  const back = () => {
    if (document.visibilityState === 'visible') update();
  };
  document.addEventListener('visibilitychange', back);
  window.addEventListener('focus', update);
  return () => {
    clearInterval(every);
    document.removeEventListener('visibilitychange', back);
    window.removeEventListener('focus', update);
  };
});

/** "3 minutes ago", "yesterday", … for a time in the past or future. */
export function relative(iso?: string | null): string {
  if (!iso) return '';
  clock();
  const t = new Date(iso).getTime();
  const diff = (t - Date.now()) / 1000;
  const abs = Math.abs(diff);
  if (abs < 45) return rtf.format(Math.round(diff), 'second');
  if (abs < 2700) return rtf.format(Math.round(diff / 60), 'minute');
  if (abs < 64800) return rtf.format(Math.round(diff / 3600), 'hour');
  if (abs < 2592000) return rtf.format(Math.round(diff / 86400), 'day');
  return dateTime(iso);
}

/** A date and time in the browser's time zone. */
export function dateTime(iso?: string | null, timeZone?: string): string {
  if (!iso) return '';
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone });
}

/** 1.2 MB, 340 KB, … */
export function bytes(n?: number | null): string {
  if (n == null) return '';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** 850 ms, 2.4 s, 3 min 5 s. */
export function duration(ms?: number | null): string {
  if (ms == null) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
  const m = Math.floor(ms / 60000);
  return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
}

/** The browser's IANA time zone. */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}
