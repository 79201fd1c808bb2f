/**
 * The apps the core routes to. It loads a definitions revision (a commit),
 * validates every app in it, and swaps the whole snapshot at once; listeners
 * (the sandbox manager) follow each swap. A broken app is reported and left
 * out; the others keep serving.
 */
import type { DefinitionsRepo } from '../definitions/definitions-repo.js';
import { loadAppDefinitions } from '../definitions/load-app-definitions.js';
import type { DefinitionProblem } from '../definitions/validate-app-definition.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { AppSnapshot } from './app-snapshot.js';

export interface ApplicationRegistryOptions {
  /** The definitions repository; absent when apps come from Kubernetes. */
  readonly repo?: DefinitionsRepo;
  /** Where revisions are materialized; runners read scripts from here. */
  readonly revisionsRoot: string;
  readonly metrics: Metrics;
  readonly logger: Logger;
}

export type SnapshotListener = (snapshot: AppSnapshot) => Promise<void> | void;

export class ApplicationRegistry {
  private current: AppSnapshot = new AppSnapshot('', [], []);
  private lastRefused: RefusedRevision | undefined;
  private readonly listeners: SnapshotListener[] = [];

  constructor(private readonly options: ApplicationRegistryOptions) {}

  get snapshot(): AppSnapshot {
    return this.current;
  }

  onChange(listener: SnapshotListener): void {
    this.listeners.push(listener);
  }

  /** The last revision refused on reload, if the one in force is older than HEAD. */
  get refused(): RefusedRevision | undefined {
    return this.lastRefused;
  }

  /**
   * Loads HEAD when it differs from the loaded revision. At start every valid app
   * is served and the invalid ones are reported; on a reload (`refuseInvalid`) a
   * revision with any problem is refused whole and the one in force keeps serving.
   */
  async load(options: { refuseInvalid?: boolean } = {}): Promise<AppSnapshot> {
    const { repo, revisionsRoot, logger, metrics } = this.options;
    if (!repo) throw new Error('this registry has no definitions repository');
    const head = await repo.head();
    if (head === this.current.revision || head === this.lastRefused?.revision) return this.current;

    const revision = await repo.materialize(head, revisionsRoot);
    for (const skipped of revision.skipped) logger.warn({ revision: head, file: skipped }, 'definitions entry skipped: symlinks and submodules are never read');
    const { documents, problems } = await loadAppDefinitions(revision.dir);
    const snapshot = new AppSnapshot(head, documents, problems);
    for (const problem of snapshot.problems) {
      logger.error({ code: 'UHLP_DEFINITION_INVALID', revision: head, file: problem.file, path: problem.path }, `invalid definition: ${problem.reason}`);
    }
    if (options.refuseInvalid && snapshot.problems.length > 0) {
      this.lastRefused = { revision: head, at: new Date().toISOString(), problems: snapshot.problems };
      metrics.definitionReloads.labels('refused').inc();
      logger.error({ revision: head, inForce: this.current.revision }, 'definitions revision refused; the previous revision keeps serving');
      return this.current;
    }
    metrics.definitionErrors.set(snapshot.problems.length);
    metrics.appsLoaded.set(snapshot.apps.size);
    if (this.current.revision !== '') metrics.definitionReloads.labels('applied').inc();
    logger.info({ revision: head, apps: [...snapshot.apps.keys()], invalid: snapshot.problems.length }, 'definitions loaded');

    await this.publish(snapshot);
    return snapshot;
  }

  /** Puts a snapshot in force (the Kubernetes source builds its own). */
  async publish(snapshot: AppSnapshot): Promise<void> {
    // Listeners (the pools) follow before the swap, so a new app is never routed to a pool that does not exist yet.
    for (const listener of this.listeners) await listener(snapshot);
    this.current = snapshot;
    this.lastRefused = undefined;
    this.options.metrics.appsLoaded.set(snapshot.apps.size);
    this.options.metrics.definitionErrors.set(snapshot.problems.length);
  }
}

export interface RefusedRevision {
  readonly revision: string;
  readonly at: string;
  readonly problems: readonly DefinitionProblem[];
}
