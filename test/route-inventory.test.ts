/**
 * The route inventory: every route a real core serves (a `uhlp dev` core in
 * this process, every part on: console, oracle, sources, workflows, /mcp, the
 * dev token), on every listener, against the tables of docs/security.md
 * ("Listeners and audiences"):
 *
 * - the listeners and the audiences each serves are the ones route-audience.ts
 *   enforces;
 * - every route is in the routes table with the audience it declares, and the
 *   table names no route the core does not have;
 * - a request to each route on each listener is refused (UHLP_NOT_ON_THIS_LISTENER)
 *   exactly when the listener does not serve the route's audience; and every
 *   operator route refuses a DNS-rebinding Host (UHLP_HOST_NOT_ALLOWED);
 * - the views' origin and the sandboxes' socket answer no core route but theirs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { startCore, type RunningCore } from '../src/core/start-core.js';
import { LISTENERS, type AudienceRoute, type ListenerName } from '../src/core/route-audience.js';
import { copyFixture, REPO_ROOT } from './helpers/uhlp-process.js';
import { git } from './helpers/git-repo.js';

const SECURITY_DOC = path.join(REPO_ROOT, 'docs', 'security.md');

/** The rows of the markdown table that follows `heading` in docs/security.md, as cells with code spans unwrapped. */
function tableAfter(heading: string): string[][] {
  const text = readFileSync(SECURITY_DOC, 'utf8');
  const start = text.indexOf(heading);
  if (start < 0) throw new Error(`docs/security.md has no "${heading}"`);
  const lines = text.slice(start).split('\n');
  const first = lines.findIndex((line) => line.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split(' | ')
        .map((cell) => cell.trim()),
    );
  }
  return rows;
}

const unwrap = (cell: string): string => cell.replace(/^`|`$/g, '');

/** One request over TCP, with the Host given. */
function send(base: string, method: string, target: string, host?: string): Promise<{ status: number; code?: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(target, base);
    const request = http.request(url, { method, headers: { ...(host !== undefined ? { host } : {}), 'content-type': 'application/json', 'content-length': '2' } }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => {
        let code: string | undefined;
        try {
          code = (JSON.parse(text) as { code?: string }).code;
        } catch {
          code = undefined;
        }
        resolve({ status: response.statusCode!, code });
      });
    });
    request.on('error', reject);
    request.end('{}');
  });
}

/** A concrete path for a route pattern: every parameter and wildcard filled with a harmless value. */
function concrete(url: string): string {
  return url.replace(/:[A-Za-z]+/g, 'nobody').replace(/\*$/, 'nowhere').replace(/^\*$/, '/nowhere');
}

describe('the route inventory', () => {
  let core: RunningCore;
  let repo: string;
  let dataDir: string;
  let routes: readonly AudienceRoute[];

  beforeAll(async () => {
    repo = copyFixture('sockets');
    git(repo, 'init', '-q');
    git(repo, 'add', '-A');
    git(repo, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'apps');
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-inventory-'));
    const config = loadConfig(repo, { port: '0', 'data-dir': dataDir, driver: 'process' }, { UHLP_LOG_LEVEL: 'silent', PATH: process.env['PATH'] ?? '' });
    core = await startCore(config);
    routes = core.routes().filter((route) => route.method !== 'HEAD');
  }, 60_000);

  afterAll(async () => {
    await core?.close();
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    if (repo !== undefined) rmSync(repo, { recursive: true, force: true });
  });

  it('states the audiences of every listener as route-audience.ts enforces them', () => {
    const rows = tableAfter('### Listeners and audiences');
    const documented = Object.fromEntries(rows.map((row) => [unwrap(row[0]!), row[2]!.split(',').map((cell) => unwrap(cell.trim()))]));
    expect(documented).toEqual(Object.fromEntries(Object.entries(LISTENERS).map(([name, spec]) => [name, [...spec.audiences]])));
  });

  it('lists every route with the audience it declares, and no other', () => {
    const rows = tableAfter('### Every route');
    // The table's first cell is `METHOD /path`, its second the audience.
    const documented = rows.map((row) => `${unwrap(row[0]!)} ${unwrap(row[1]!)}`).sort();
    const served = [...new Set(routes.map((route) => `${route.method} ${route.url} ${route.audience}`))].sort();
    expect(documented).toEqual(served);
  });

  it('answers each route on the listeners of its audience only', async () => {
    const bases: Record<'app' | 'operator', string> = { app: core.url, operator: core.operatorUrl };
    const wrong: string[] = [];
    for (const route of routes) {
      for (const listener of ['app', 'operator'] as const satisfies readonly ListenerName[]) {
        // The app listener serves app paths itself, without fastify: the catch-all route is for the other listeners.
        if (route.url === '*' && listener === 'app') continue;
        const answer = await send(bases[listener], route.method, concrete(route.url));
        const refused = answer.code === 'UHLP_NOT_ON_THIS_LISTENER';
        const served = LISTENERS[listener].audiences.includes(route.audience);
        if (refused === served) wrong.push(`${route.method} ${route.url} (${route.audience}) on ${listener}: ${answer.status} ${answer.code ?? ''}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('refuses a DNS-rebinding Host on every operator route, and only there', async () => {
    const port = new URL(core.operatorUrl).port;
    const wrong: string[] = [];
    for (const route of routes) {
      if (!LISTENERS.operator.audiences.includes(route.audience)) continue;
      const answer = await send(core.operatorUrl, route.method, concrete(route.url), `rebind.example:${port}`);
      const refused = answer.status === 421 && answer.code === 'UHLP_HOST_NOT_ALLOWED';
      if (refused !== (route.audience === 'operators')) wrong.push(`${route.method} ${route.url} (${route.audience}): ${answer.status} ${answer.code ?? ''}`);
    }
    expect(wrong).toEqual([]);
  });

  it('serves no core route on the views origin', async () => {
    const views = core.console!.sandboxUrl;
    for (const target of ['/_uhlp/console/', '/_uhlp/console/api/session', '/_uhlp/oracle/status', '/healthz', '/mcp', '/shelly/echo/hi']) {
      expect((await send(views, 'GET', target)).status, target).toBe(404);
    }
  });
});
