/**
 * An immutable view of every routable app at one definitions revision. The
 * registry swaps whole snapshots, so a request that resolved its app keeps a
 * consistent view (routes, pools, script revision) until it finishes.
 */
import type { AppDefinitionDocument, ComponentSpec, PoolSpec } from './schema/app-definition-schema.js';
import type { DefinitionProblem } from './validation/validate-app-definition.js';
import { RouteTable } from '../sources/http/route-table.js';
import { indexSourceRoutes, type SourceRoutes } from '../sources/source-routes.js';

export interface LoadedApp {
  readonly id: string;
  /** Commit the app was read from; runners load scripts from this revision. */
  readonly revision: string;
  readonly document: AppDefinitionDocument;
  readonly pathPrefix: string;
  readonly hosts: readonly string[];
  readonly routes: RouteTable;
  /** The queue, cron, callback and trigger routes, with their streams and delivery policies. */
  readonly sourceRoutes: SourceRoutes;
  readonly components: ReadonlyMap<string, ComponentSpec>;
  readonly pools: ReadonlyMap<string, PoolSpec>;
}

/** An app document and where it came from; an app may carry its own revision (apps from Kubernetes, apps held back). */
export interface SnapshotDocument {
  readonly file: string;
  readonly document: AppDefinitionDocument;
  /** The revision its files are read at; the snapshot's revision when omitted. */
  readonly revision?: string;
}

/** An app that is invalid at the snapshot's revision and serves the revision it was last valid at. */
export interface HeldBackApp {
  readonly app: string;
  readonly servingRevision: string;
  /** Why the snapshot's revision of the app was not taken. */
  readonly problems: readonly DefinitionProblem[];
}

export interface AppResolution {
  readonly app: LoadedApp;
  /** The path the app routes on: the full path for a host match, else the rest after the prefix. */
  readonly appPath: string;
}

export class AppSnapshot {
  readonly apps: ReadonlyMap<string, LoadedApp>;
  /**
   * The problems of the definitions not served: a held-back app's problems are
   * not among them (they are listed once, with the app, in `heldBack`).
   */
  readonly problems: readonly DefinitionProblem[];
  private readonly byHost = new Map<string, LoadedApp>();
  private readonly byPrefix: Array<{ prefix: string; app: LoadedApp }> = [];

  constructor(
    readonly revision: string,
    documents: readonly SnapshotDocument[],
    problems: readonly DefinitionProblem[],
    /** Apps served at an older revision because this one breaks them. */
    readonly heldBack: readonly HeldBackApp[] = [],
  ) {
    const apps = new Map<string, LoadedApp>();
    const held = new Set(heldBack.flatMap((app) => app.problems));
    const allProblems = problems.filter((problem) => !held.has(problem));
    const prefixOwners = new Map<string, string>();
    for (const { file, document, revision: own } of documents) {
      const app = toLoadedApp(own ?? revision, document);
      const conflict =
        app.hosts.map((h) => [h, this.byHost.get(h)] as const).find(([, owner]) => owner) ??
        (prefixOwners.has(app.pathPrefix) ? ([app.pathPrefix, apps.get(prefixOwners.get(app.pathPrefix)!)] as const) : undefined);
      if (conflict) {
        const [taken, owner] = conflict;
        const field = taken === app.pathPrefix ? '/spec/ingress/pathPrefix' : '/spec/ingress/hosts';
        allProblems.push({ file, path: field, reason: `"${taken}" is already taken by app "${owner!.id}"` });
        continue;
      }
      apps.set(app.id, app);
      for (const host of app.hosts) this.byHost.set(host, app);
      prefixOwners.set(app.pathPrefix, app.id);
      this.byPrefix.push({ prefix: app.pathPrefix, app });
    }
    // Longest prefix first, so /shop/admin wins over /shop.
    this.byPrefix.sort((a, b) => b.prefix.length - a.prefix.length);
    this.apps = apps;
    this.problems = allProblems;
  }

  /** Finds the app for a request. `host` may carry a port; `path` has no query string. */
  resolve(host: string | undefined, path: string): AppResolution | undefined {
    if (host && this.byHost.size > 0) {
      const app = this.byHost.get(hostName(host));
      if (app) return { app, appPath: path };
    }
    for (const { prefix, app } of this.byPrefix) {
      if (prefix === '/') return { app, appPath: path };
      if (path === prefix) return { app, appPath: '/' };
      if (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 47 /* "/" */) {
        return { app, appPath: path.slice(prefix.length) };
      }
    }
    return undefined;
  }
}

function hostName(host: string): string {
  const lower = host.toLowerCase();
  if (lower.startsWith('[')) return lower.slice(0, lower.indexOf(']') + 1);
  const colon = lower.lastIndexOf(':');
  return colon === -1 ? lower : lower.slice(0, colon);
}

function toLoadedApp(revision: string, document: AppDefinitionDocument): LoadedApp {
  const { spec } = document;
  const components = new Map(spec.components.map((c) => [c.id, c]));
  const pools = new Map(spec.pools.map((p) => [p.name, p]));
  return {
    id: document.metadata.name,
    revision,
    document,
    pathPrefix: spec.ingress.pathPrefix ?? `/${document.metadata.name}`,
    hosts: spec.ingress.hosts.map((h) => h.toLowerCase()),
    routes: new RouteTable(spec.routes),
    sourceRoutes: indexSourceRoutes(document.metadata.name, spec.routes, components, pools),
    components,
    pools,
  };
}
