/**
 * Hash routes (`#/runs/RUN-...`): the page itself is always /_uhlp/console/,
 * so relative asset and API URLs hold on every route.
 */
import { useEffect, useState } from 'preact/hooks';

export interface Route {
  readonly page: string;
  readonly parts: readonly string[];
  readonly params: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const [path = '', search = ''] = hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').filter(Boolean).map((part) => decodeURIComponent(part));
  return { page: parts[0] ?? 'runs', parts: parts.slice(1), params: new URLSearchParams(search) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = (): void => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}

export function href(page: string, ...parts: string[]): string {
  return `#/${[page, ...parts.map((part) => encodeURIComponent(part))].join('/')}`;
}

export function navigate(to: string): void {
  location.hash = to;
}
