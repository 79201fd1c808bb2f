/**
 * The apps the core routes to. It loads a definitions revision (a commit),
 * validates every app in it, and swaps the whole snapshot at once; listeners
 * (the sandbox manager) follow each swap. A broken app is reported and left
 * out; the others keep serving.
 */
import type { DefinitionsRepo } from '../definitions/definitions-repo.js';
import { loadAppDefinitions } from '../definitions/load-app-definitions.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { AppSnapshot } from './app-snapshot.js';

export interface ApplicationRegistryOptions {
  readonly repo: DefinitionsRepo;
  /** Where revisions are materialized; runners read scripts from here. */
  readonly revisionsRoot: string;
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

  /** Loads HEAD when it differs from the loaded revision; returns the snapshot in force. */
  async load(): Promise<AppSnapshot> {
    const { repo, revisionsRoot, logger, metrics } = this.options;
    const head = await repo.head();
    if (head === this.current.revision) return this.current;

    const revision = await repo.materialize(head, revisionsRoot);
    for (const skipped of revision.skipped) logger.warn({ revision: head, file: skipped }, 'definitions entry skipped: symlinks and submodules are never read');
    const { documents, problems } = await loadAppDefinitions(revision.dir);
    const snapshot = new AppSnapshot(head, documents, problems);
    for (const problem of snapshot.problems) {
      logger.error({ code: 'UHLP_DEFINITION_INVALID', revision: head, file: problem.file, path: problem.path }, `invalid definition: ${problem.reason}`);
    }
    metrics.definitionErrors.set(snapshot.problems.length);
    metrics.appsLoaded.set(snapshot.apps.size);
    logger.info({ revision: head, apps: [...snapshot.apps.keys()], invalid: snapshot.problems.length }, 'definitions loaded');

    this.current = snapshot;
    for (const listener of this.listeners) await listener(snapshot);
    return snapshot;
  }
}
