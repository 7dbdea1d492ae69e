// A small history router: the page's path picks a route (routes.ts), links
// with data-link-free plain <a href="/..."> are intercepted, and the server
// answers every such path with index.html.

class Location {
  path = $state(window.location.pathname);
  search = $state(window.location.search);
  hash = $state(window.location.hash);
}

export const location = new Location();

function sync() {
  location.path = window.location.pathname;
  location.search = window.location.search;
  location.hash = window.location.hash;
}

/** Goes to path (with optional ?query), adding a history entry unless replace. */
export function navigate(to: string, opts: { replace?: boolean } = {}) {
  if (to === window.location.pathname + window.location.search + window.location.hash) return;
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  sync();
  window.scrollTo(0, 0);
}

/** The value of a query parameter of the current location. */
export function param(name: string): string | null {
  return new URLSearchParams(location.search).get(name);
}

window.addEventListener('popstate', sync);

// Same-origin links navigate without a page load.
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element | null)?.closest?.('a');
  if (!a || a.target || a.hasAttribute('download') || a.getAttribute('rel')?.includes('external')) return;
  const href = a.getAttribute('href');
  if (!href || !href.startsWith('/') || href.startsWith('//') || href.startsWith('/api/')) return;
  e.preventDefault();
  navigate(href);
});

export interface Match {
  params: Record<string, string>;
}

/** Matches path against a pattern like /agents/:id; null when it does not match. */
export function match(pattern: string, path: string): Match | null {
  const p = pattern.split('/').filter(Boolean);
  const s = path.split('/').filter(Boolean);
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i].startsWith(':')) params[p[i].slice(1)] = decodeURIComponent(s[i]);
    else if (p[i] !== s[i]) return null;
  }
  return { params };
}
