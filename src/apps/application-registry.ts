/**
 * The apps the core routes to. It loads a definitions revision (a commit),
 * validates every app in it, and swaps the whole snapshot at once; listeners
 * (the sandbox manager) follow each swap. Apps are judged one by one: a broken
 * app is reported and left out, and never keeps another app from loading. An
 * app that was serving and is broken by a new commit keeps serving the revision
 * it was last valid at ("held back"), and /readyz and a metric say so.
 */
import type { DefinitionsRepo } from './git/definitions-repo.js';
import { loadAppDefinitions, type AppSecrets } from './load-app-definitions.js';
import type { DefinitionProblem } from './validation/validate-app-definition.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { AppSnapshot, type HeldBackApp, type SnapshotDocument } from './app-snapshot.js';

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
  readonly metrics: Metrics;
  readonly logger: Logger;
}

export type SnapshotListener = (snapshot: AppSnapshot) => Promise<void> | void;

export class ApplicationRegistry {
  private current: AppSnapshot = new AppSnapshot('', [], []);
  private readonly listeners: SnapshotListener[] = [];

  constructor(private readonly options: ApplicationRegistryOptions) {}

  get snapshot(): AppSnapshot {
    return this.current;
  }

  onChange(listener: SnapshotListener): void {
    this.listeners.push(listener);
  }

  /** Loads HEAD when it differs from the loaded revision. */
  async load(): Promise<AppSnapshot> {
    const { repo, revisionsRoot, logger, metrics } = this.options;
    if (!repo) throw new Error('this registry has no definitions repository');
    const head = await repo.head();
    if (head === this.current.revision) return this.current;

    const revision = await repo.materialize(head, revisionsRoot);
    for (const skipped of revision.skipped) logger.warn({ revision: head, file: skipped }, 'definitions entry skipped: symlinks and submodules are never read');
    const { documents, problems } = await loadAppDefinitions(revision, this.options.appSecrets);
    const { kept, heldBack } = this.holdBack(documents, problems);
    const snapshot = new AppSnapshot(head, [...documents, ...kept], problems, heldBack);
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
