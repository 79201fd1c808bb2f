/**
 * The apps the core routes to. It loads a definitions revision (a commit),
 * validates every app in it, and swaps the whole snapshot at once; listeners
 * (the sandbox manager) follow each swap. Apps are judged one by one: a broken
 * app is reported and left out, and never keeps another app from loading. An
 * app that was serving and is broken by a new commit keeps serving the revision
 * it was last valid at ("held back"), and /readyz and a metric say so.
 *
 * The apps' secrets are part of what is judged: when they change (a secret
 * added to or removed from the secrets file), the loaded revision is judged
 * again (`recheck`), so an app refused for a missing secret loads as soon as
 * it is there, and a serving app whose secret is removed is held back (it
 * keeps serving; its fetches that need the secret fail UHLP_SECRET_UNAVAILABLE).
 */
import type { DefinitionsRepo } from './git/definitions-repo.js';
import { loadAppDefinitions, type AppSecrets } from './load-app-definitions.js';
import type { DefinitionProblem } from './validation/validate-app-definition.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { AppSnapshot, type HeldBackApp, type SnapshotDocument } from './app-snapshot.js';
import { KeyedSemaphore } from '../shared/keyed-semaphore.js';

export interface ApplicationRegistryOptions {
  /** The definitions repository; absent when apps come from Kubernetes. */
  readonly repo?: DefinitionsRepo;
  /** Where revisions are materialized; runners read scripts from here. */
  readonly revisionsRoot: string;
  /**
   * Each app's own MCP secrets: a remote server's secretRef naming any other is
   * a definition problem of the app. @defaultValue not checked
   */
  readonly appSecrets?: AppSecrets;
  /** The operator's UHLP_LLM_ALLOW_PRIVATE: apps' model endpoints are judged against it at load. @defaultValue not known */
  readonly llmAllowPrivate?: readonly string[];
  readonly metrics: Metrics;
  readonly logger: Logger;
}

export type SnapshotListener = (snapshot: AppSnapshot) => Promise<void> | void;

export class ApplicationRegistry {
  private current: AppSnapshot = new AppSnapshot('', [], []);
  private readonly listeners: SnapshotListener[] = [];
  /** Loads and rechecks run one at a time, in the order they came. */
  private readonly loading = new KeyedSemaphore();

  constructor(private readonly options: ApplicationRegistryOptions) {}

  get snapshot(): AppSnapshot {
    return this.current;
  }

  onChange(listener: SnapshotListener): void {
    this.listeners.push(listener);
  }

  /** Loads HEAD when it differs from the loaded revision. */
  load(): Promise<AppSnapshot> {
    const { repo } = this.options;
    if (!repo) return Promise.reject(new Error('this registry has no definitions repository'));
    return this.loading.run('definitions', async () => {
      const head = await repo.head();
      return head === this.current.revision ? this.current : this.apply(repo, head);
    });
  }

  /**
   * Judges the loaded revision again, as the apps' secrets are now, and puts
   * the outcome in force only when it differs (an app loads, or is held back):
   * a rotated value changes nothing here, and no pool is touched.
   */
  recheck(): Promise<AppSnapshot> {
    const { repo } = this.options;
    if (!repo) return Promise.reject(new Error('this registry has no definitions repository'));
    return this.loading.run('definitions', async () => {
      const revision = this.current.revision;
      return revision === '' ? this.current : this.apply(repo, revision, { onlyIfChanged: true });
    });
  }

  private async apply(repo: DefinitionsRepo, head: string, options: { onlyIfChanged?: boolean } = {}): Promise<AppSnapshot> {
    const { revisionsRoot, logger, metrics } = this.options;
    const revision = await repo.materialize(head, revisionsRoot);
    if (options.onlyIfChanged !== true) for (const skipped of revision.skipped) logger.warn({ revision: head, file: skipped }, 'definitions entry skipped: symlinks and submodules are never read');
    const { documents, problems } = await loadAppDefinitions(revision, this.options.appSecrets, this.options.llmAllowPrivate);
    const { kept, heldBack } = this.holdBack(documents, problems);
    const snapshot = new AppSnapshot(head, [...documents, ...kept], problems, heldBack);
    if (options.onlyIfChanged === true && outcome(snapshot) === outcome(this.current)) return this.current;
    for (const problem of snapshot.problems) {
      logger.error({ code: 'UHLP_DEFINITION_INVALID', revision: head, file: problem.file, path: problem.path }, `invalid definition: ${problem.reason}`);
    }
    for (const held of heldBack) {
      for (const problem of held.problems) {
        logger.error({ code: 'UHLP_DEFINITION_INVALID', revision: head, file: problem.file, path: problem.path }, `invalid definition: ${problem.reason}`);
      }
      logger.error({ app: held.app, revision: head, serving: held.servingRevision }, 'app invalid at the new revision; it keeps serving the revision it was last valid at');
    }
    if (this.current.revision !== '') metrics.definitionReloads.labels(heldBack.length > 0 ? 'held-back' : 'applied').inc();
    logger.info({ revision: head, apps: [...snapshot.apps.keys()], invalid: snapshot.problems.length, heldBack: heldBack.length }, 'definitions loaded');

    await this.publish(snapshot);
    return snapshot;
  }

  /**
   * The apps that are invalid in the new revision but serving now: they stay, at
   * the revision they are served at, so one broken commit never takes a working app down.
   */
  private holdBack(
    documents: readonly SnapshotDocument[],
    problems: readonly DefinitionProblem[],
  ): { kept: SnapshotDocument[]; heldBack: HeldBackApp[] } {
    const valid = new Set(documents.map((d) => d.document.metadata.name));
    const kept: SnapshotDocument[] = [];
    const heldBack: HeldBackApp[] = [];
    for (const app of this.current.apps.values()) {
      if (valid.has(app.id)) continue;
      const file = `apps/${app.id}/app.yaml`;
      const own = problems.filter((problem) => problem.file === file || problem.file.startsWith(`apps/${app.id}/`));
      // An app whose directory is gone was removed on purpose: it goes.
      if (own.length === 0) continue;
      kept.push({ file, document: app.document, revision: app.revision });
      heldBack.push({ app: app.id, servingRevision: app.revision, problems: own });
    }
    return { kept, heldBack };
  }

  /** Puts a snapshot in force (the Kubernetes source builds its own). */
  async publish(snapshot: AppSnapshot): Promise<void> {
    // Listeners (the pools) follow before the swap, so a new app is never routed to a pool that does not exist yet.
    for (const listener of this.listeners) await listener(snapshot);
    this.current = snapshot;
    this.options.metrics.appsLoaded.set(snapshot.apps.size);
    // Every problem of the revision counts, a held-back app's too (the snapshot lists those with the app).
    this.options.metrics.definitionErrors.set(snapshot.problems.length + snapshot.heldBack.reduce((sum, held) => sum + held.problems.length, 0));
    this.options.metrics.appsHeldBack.set(snapshot.heldBack.length);
  }
}

/** What judging a revision decided: which apps serve at which revision, and every problem. */
function outcome(snapshot: AppSnapshot): string {
  const apps = [...snapshot.apps.values()].map((app) => `${app.id}@${app.revision}`).sort();
  return JSON.stringify([snapshot.revision, apps, snapshot.problems, snapshot.heldBack]);
}
