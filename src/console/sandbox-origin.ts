/**
 * The views' sandbox origin: a listener of its own (another port, or behind an
 * Ingress another host name) that serves the sandbox page of MCP Apps views
 * and the files it loads, and nothing else. MCP Apps requires the sandbox
 * proxy to be on an origin other than the host's: the proxy frame has
 * `allow-same-origin` (on this origin, never on the console's), and the views
 * it holds run in frames with opaque origins of their own.
 *
 * `GET /sandbox/sandbox.html?app=<app>&uri=<ui://...>` answers the page with
 * the Content-Security-Policy that resource of that app declares, read from
 * the app's definition here (never from the browser): a view gets the policy
 * its app declared, and a page that names no declared resource gets the
 * restrictive default.
 */
import http from 'node:http';
import type net from 'node:net';
import { listenOn } from '../shared/listen-on.js';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import type { UiCspSpec } from '../apps/schema/ui-schema.js';
import type { Logger } from '../logger.js';
import type { ConsoleAssets } from './console-assets.js';
import { sandboxPageCsp } from './console-csp.js';

export interface SandboxOriginOptions {
  readonly assets: ConsoleAssets;
  readonly registry: Pick<ApplicationRegistry, 'snapshot'>;
  readonly logger: Logger;
  /** Console origins that may embed the sandbox page, besides loopback ones and the page host's own name on any port. */
  readonly consoleOrigins: readonly string[];
}

/** Loopback consoles on any port (CSP has no source expression for an IPv6 literal: a console on [::1] is reached as localhost). */
const LOOPBACK_ORIGINS = ['http://127.0.0.1:*', 'http://localhost:*'];
const PAGE = '/sandbox/sandbox.html';

export class SandboxOrigin {
  private readonly server: http.Server;

  constructor(private readonly options: SandboxOriginOptions) {
    this.server = http.createServer((request, response) => this.serve(request, response));
  }

  /** Listens; resolves with the port. */
  async listen(host: string, port: number): Promise<number> {
    return ((await listenOn(this.server, { host, port })) as net.AddressInfo).port;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
  }

  private serve(request: http.IncomingMessage, response: http.ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://sandbox.invalid');
    const common = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'cross-origin-resource-policy': 'same-site' };
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { ...common, allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    const file = url.pathname === PAGE ? 'sandbox.html' : url.pathname.startsWith('/sandbox/') ? url.pathname.slice('/sandbox/'.length) : undefined;
    const asset = file !== undefined && this.options.assets.sandboxFiles.has(file) ? this.options.assets.files.get(file) : undefined;
    if (asset === undefined) {
      response.writeHead(404, { ...common, 'content-type': 'text/plain; charset=utf-8' }).end('this origin serves the console views\' sandbox page only\n');
      return;
    }
    const headers: Record<string, string> = { ...common, 'content-type': asset.contentType, 'content-length': String(asset.body.length) };
    if (file === 'sandbox.html') {
      headers['content-security-policy'] = sandboxPageCsp(this.declaredCsp(url.searchParams.get('app'), url.searchParams.get('uri')), this.frameAncestors(request));
      // The policy depends on the query: a cached page must never serve another view.
      headers['cache-control'] = 'no-store';
    } else headers['cache-control'] = 'public, max-age=31536000, immutable';
    response.writeHead(200, headers).end(request.method === 'HEAD' ? undefined : asset.body);
  }

  /** The CSP a resource of an app declares; undefined (the restrictive default) for anything else. */
  private declaredCsp(appId: string | null, uri: string | null): UiCspSpec | undefined {
    if (appId === null || uri === null) return undefined;
    const app = this.options.registry.snapshot.apps.get(appId);
    return app?.document.spec.ui?.resources.find((resource) => resource.uri === uri)?.csp;
  }

  private frameAncestors(request: http.IncomingMessage): string[] {
    const ancestors = [...LOOPBACK_ORIGINS, ...this.options.consoleOrigins];
    // The console on this machine's name (another port of the same host): `uhlp dev --host 0.0.0.0` reached by name.
    const hostName = /^([A-Za-z0-9.-]+)(:\d+)?$/.exec(request.headers.host ?? '')?.[1];
    if (hostName !== undefined) ancestors.push(`http://${hostName}:*`, `https://${hostName}:*`);
    return [...new Set(ancestors)];
  }
}
