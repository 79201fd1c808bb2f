/**
 * Apps from Kubernetes (`--registry kubernetes`): the AppDefinitions the operator
 * marked Ready in the watched namespaces. The spec comes from the resource; the
 * app's files (scripts/, prompts/, workflows/) come from the Git source the spec
 * names (`spec.source.git`), fetched and materialized as an immutable revision, so
 * requests in flight keep the files they started with. Every change of the Ready
 * set rebuilds the snapshot; a deleted app leaves it at once.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { UhlpError } from '../../shared/errors.js';
import { APP_API_VERSION, APP_KIND, type AppDefinitionDocument } from '../schema/app-definition-schema.js';
import { checkGitSourcePath } from '../git/git-source.js';
import { materializeTree } from '../git/git-tree.js';
import { appRevisionDir } from '../revision-paths.js';
import { readInside, type AppSecrets } from '../load-app-definitions.js';
import { validateAppDefinition, type DefinitionProblem } from '../validation/validate-app-definition.js';
import type { LookupAll } from '../../net/address-guard.js';
import { AppDefinitionWatcher, type ReadyAppDefinition } from './app-definition-watcher.js';
import type { WatchLiveness } from '../../k8s/resource-informer.js';
import type { Logger } from '../../logger.js';
import { AppSnapshot } from '../app-snapshot.js';
import type { ApplicationRegistry } from '../application-registry.js';
import { GitSourceCache } from '../git/git-source-cache.js';
import { secretNamesOf, type NamespaceSecrets, type SecretData } from './namespace-secrets.js';
import type { ScrubbedValue, SecretValue } from '../../secrets/secret-store.js';

/**
 * How often the Secrets of served apps are read again: the bound within which a
 * rotated Secret is in use (the core's Role has `get`, no `watch`, on Secrets).
 */
export const SECRET_REFRESH_MS = 10_000;

export interface KubernetesAppSourceOptions {
  readonly kubeConfig: KubeConfig;
  /** Namespaces to watch; all when empty. */
  readonly namespaces: readonly string[];
  readonly registry: ApplicationRegistry;
  /** Where revisions are materialized (the runners' definitions root). */
  readonly revisionsRoot: string;
  /** Where bare clones of app sources live. */
  readonly sourcesDir: string;
  /** `host:port` pairs app sources may reach on non-public addresses (`UHLP_GIT_ALLOW_PRIVATE`). @defaultValue [] */
  readonly allowPrivate?: readonly string[];
  /** CA bundle for https sources (`UHLP_GIT_CA_FILE`). @defaultValue the system's */
  readonly caFile?: string;
  /** DNS resolution of source hosts. @defaultValue dns.lookup */
  readonly lookup?: LookupAll;
  /**
   * The Secrets of each app's own namespace, which its remote servers' secretRefs name; read
   * when the app loads, and a secretRef naming one the namespace lacks is a definition problem.
   * @defaultValue `appSecrets`, else not checked
   */
  readonly namespaceSecrets?: NamespaceSecrets;
  /** Each app's own MCP secrets from elsewhere (the core's secrets file), when `namespaceSecrets` is not given. @defaultValue not checked */
  readonly appSecrets?: AppSecrets;
  /** The operator's UHLP_LLM_ALLOW_PRIVATE: apps' model endpoints are judged against it at load. @defaultValue not known */
  readonly llmAllowPrivate?: readonly string[];
  /** How often served apps' Secrets are read again. @defaultValue SECRET_REFRESH_MS */
  readonly secretRefreshMs?: number;
  readonly logger: Logger;
}

export class KubernetesAppSource {
  private readonly watcher: AppDefinitionWatcher;
  private readonly sources: GitSourceCache;
  private pending: ReadyAppDefinition[] | undefined;
  private applying: Promise<void> | undefined;
  /** The Secrets each served app's definition names, as read from its namespace when it loaded. */
  private secrets = new Map<string, ReadonlyMap<string, SecretData>>();
  /** Each served app's namespace and the Secrets its definition names: what the refresh reads again. */
  private secretNames = new Map<string, { namespace: string; names: string[] }>();
  /**
   * Each refused app that names Secrets, with which of them (and which keys)
   * its namespace had when it was judged: the refresh reads them again, and a
   * change judges the apps again, so an app refused for a missing Secret loads
   * once it is there.
   */
  private refused = new Map<string, { namespace: string; names: string[]; seen: string }>();
  private refreshTimer: NodeJS.Timeout | undefined;
  private readonly secretListeners: Array<() => void> = [];

  constructor(private readonly options: KubernetesAppSourceOptions) {
    this.watcher = new AppDefinitionWatcher(options.kubeConfig, {
      namespaces: [...options.namespaces],
      onError: (error) => options.logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'AppDefinition watch failed; retrying'),
    });
    this.sources = new GitSourceCache({
      root: options.sourcesDir,
      ...(options.allowPrivate ? { allowPrivate: options.allowPrivate } : {}),
      ...(options.caFile ? { caFile: options.caFile } : {}),
      ...(options.lookup ? { lookup: options.lookup } : {}),
    });
  }

  /** Resolves once the apps Ready at start are routable. */
  async start(): Promise<void> {
    this.watcher.onChange((apps) => this.schedule(apps));
    await this.watcher.start();
    this.schedule(this.watcher.current());
    await this.idle();
    if (this.options.namespaceSecrets !== undefined) {
      const every = this.options.secretRefreshMs ?? SECRET_REFRESH_MS;
      const tick = (): void => {
        this.refreshSecrets()
          .catch((error: Error) => this.options.logger.warn({ err: error.message }, 'reading apps\' Secrets again failed; the values before stay in use'))
          .finally(() => {
            if (this.refreshTimer !== undefined) this.refreshTimer = setTimeout(tick, every).unref();
          });
      };
      this.refreshTimer = setTimeout(tick, every).unref();
    }
  }

  async stop(): Promise<void> {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = undefined;
    await this.watcher.stop();
    await this.idle();
  }

  /** The value of a Secret of the app's own namespace that its definition names; undefined for any other. */
  secretValue(appId: string, name: string, key: string): SecretValue | undefined {
    return this.secrets.get(appId)?.get(name)?.get(key);
  }

  /** Every value of the served apps' Secrets, named, for the scrubber. */
  secretValues(): ScrubbedValue[] {
    return [...this.secrets.values()].flatMap((owned) => [...owned].flatMap(([name, data]) => [...data.values()].map((entry) => ({ name, value: entry.value }))));
  }

  /** Called whenever the served apps' Secrets were read anew. */
  onSecretsChange(listener: () => void): void {
    this.secretListeners.push(listener);
  }

  /**
   * Reads the Secrets of every served app again: a rotated value is used from
   * the next request on, a request in flight keeps the value it read. A Secret
   * that is gone leaves the app without it (its credentials then fail the fetch
   * UHLP_SECRET_UNAVAILABLE) until it is back or the apps are judged again.
   * A refused app's Secrets are read too: when which of them exist changed,
   * the apps are judged again, so an app refused for a missing Secret loads.
   */
  async refreshSecrets(): Promise<void> {
    const reader = this.options.namespaceSecrets;
    if (reader === undefined) return;
    const next = new Map<string, ReadonlyMap<string, SecretData>>();
    for (const [appId, { namespace, names }] of this.secretNames) next.set(appId, await reader.read(namespace, names));
    let appeared = false;
    for (const { namespace, names, seen } of this.refused.values()) if (presence(await reader.read(namespace, names)) !== seen) appeared = true;
    // An apply that ran meanwhile has the newer word.
    if (this.applying !== undefined) return;
    if (appeared) this.schedule(this.watcher.current());
    this.secrets = next;
    for (const listener of this.secretListeners) listener();
  }

  /** Whether the app's definition names a Secret of its namespace that exists (with that key, when given). */
  hasSecret(appId: string, name: string, key?: string): boolean {
    const data = this.secrets.get(appId)?.get(name);
    return data !== undefined && (key === undefined || data.has(key));
  }

  /** Whether the AppDefinition watch follows the API server (for /readyz). */
  liveness(): WatchLiveness {
    return this.watcher.liveness();
  }

  /** Resolves when no rebuild is running or queued. */
  async idle(): Promise<void> {
    while (this.applying) await this.applying;
  }

  /** Coalesces bursts of changes: only the latest Ready set is applied. */
  private schedule(apps: ReadyAppDefinition[]): void {
    this.pending = apps;
    if (this.applying) return;
    this.applying = (async () => {
      while (this.pending) {
        const next = this.pending;
        this.pending = undefined;
        await this.apply(next).catch((error: Error) => this.options.logger.error({ err: error.message }, 'applying Kubernetes apps failed'));
      }
      this.applying = undefined;
    })();
  }

  private async apply(apps: ReadyAppDefinition[]): Promise<void> {
    const documents: Array<{ file: string; document: AppDefinitionDocument; revision: string }> = [];
    const problems: DefinitionProblem[] = [];
    const secrets = new Map<string, ReadonlyMap<string, SecretData>>();
    const secretNames = new Map<string, { namespace: string; names: string[] }>();
    const refused = new Map<string, { namespace: string; names: string[]; seen: string }>();
    for (const app of apps) {
      const file = `${app.namespace}/${app.name}`;
      try {
        const loaded = await this.load(app, file, secrets);
        if ('problems' in loaded) {
          problems.push(...loaded.problems);
          if (loaded.seen !== undefined) refused.set(app.name, { namespace: app.namespace, names: secretNamesOf(app.spec), seen: loaded.seen });
        } else documents.push(loaded);
      } catch (error) {
        problems.push(sourceProblem(file, error));
      }
    }
    for (const appId of secrets.keys()) {
      const app = apps.find((candidate) => candidate.name === appId);
      if (app !== undefined) secretNames.set(appId, { namespace: app.namespace, names: secretNamesOf(app.spec) });
    }
    this.secrets = secrets;
    this.secretNames = secretNames;
    this.refused = refused;
    for (const listener of this.secretListeners) listener();
    for (const problem of problems) this.options.logger.error({ code: 'UHLP_DEFINITION_INVALID', file: problem.file, path: problem.path }, problem.reason);
    const version = createHash('sha1').update(apps.map((a) => `${a.namespace}/${a.name}@${a.resourceVersion}`).join(',')).digest('hex');
    await this.options.registry.publish(new AppSnapshot(`k8s-${version.slice(0, 12)}`, documents, problems));
    this.options.logger.info({ apps: documents.map((d) => d.file), invalid: problems.length }, 'Kubernetes apps applied');
  }

  private async load(
    app: ReadyAppDefinition,
    file: string,
    secrets: Map<string, ReadonlyMap<string, SecretData>>,
  ): Promise<{ file: string; document: AppDefinitionDocument; revision: string } | { problems: DefinitionProblem[]; seen?: string }> {
    const git = app.spec.source?.git;
    if (!git) return { problems: [{ file, path: '/spec/source/git', reason: 'an app served from Kubernetes must name the Git source of its files' }] };
    const sourcePath = checkGitSourcePath(git.path ?? `apps/${app.name}`);
    const { commit, repoDir } = await this.sources.resolve(git.url, git.ref ?? 'HEAD');
    // One revision per (commit, path, app): two apps of one repository never share one.
    const revision = createHash('sha1').update(`${commit}\0${sourcePath}\0${app.name}`).digest('hex');
    const appDir = appRevisionDir(this.options.revisionsRoot, app.name, revision);
    await materializeTree({ repoDir, commit, sourcePath, targetDir: appDir });
    // The Secrets its definition names, from its own namespace only.
    const own = this.options.namespaceSecrets !== undefined ? await this.options.namespaceSecrets.read(app.namespace, secretNamesOf(app.spec)) : undefined;
    const hasSecret =
      own !== undefined
        ? (secret: string, key?: string): boolean => (key === undefined ? own.has(secret) : own.get(secret)?.has(key) === true)
        : this.options.appSecrets !== undefined
          ? (secret: string, key?: string): boolean => this.options.appSecrets!(app.name, secret, key)
          : undefined;
    const result = validateAppDefinition(
      { apiVersion: APP_API_VERSION, kind: APP_KIND, metadata: { name: app.name }, spec: app.spec },
      {
        file,
        appDirName: app.name,
        fileExists: (relative) => {
          const target = path.resolve(appDir, relative);
          return target.startsWith(appDir + path.sep) && existsSync(target);
        },
        readFile: (relative) => readInside(appDir, relative),
        ...(hasSecret !== undefined ? { hasSecret } : {}),
        ...(this.options.llmAllowPrivate !== undefined ? { llmAllowPrivate: this.options.llmAllowPrivate } : {}),
      },
    );
    if (result.ok && own !== undefined) secrets.set(app.name, own);
    if (result.ok) return { file, document: result.document, revision };
    return { problems: result.problems, ...(own !== undefined && secretNamesOf(app.spec).length > 0 ? { seen: presence(own) } : {}) };
  }
}

/** Which Secrets (and which of their keys) a namespace has: what a refused app waits on. */
function presence(secrets: ReadonlyMap<string, SecretData>): string {
  return JSON.stringify([...secrets].map(([name, data]) => [name, [...data.keys()].sort()]).sort());
}

/**
 * A source that could not be loaded, as a problem of the field at fault
 * (`/spec/source/git/url` for a refused URL or address) with the error's code.
 */
function sourceProblem(file: string, error: unknown): DefinitionProblem {
  if (!(error instanceof UhlpError)) return { file, path: '/spec/source/git', reason: error instanceof Error ? error.message : String(error) };
  const field = (error.details as { field?: unknown } | undefined)?.field;
  const pointer = typeof field === 'string' && field.startsWith('spec.source.git.') ? `/spec/source/git/${field.slice('spec.source.git.'.length)}` : '/spec/source/git';
  return { file, path: pointer, reason: `${error.code}: ${error.message}` };
}
