/**
 * The `runner: mcp` pools whose server is not running yet: its package being
 * installed, or failed to install and waiting to be tried again. An install
 * asks the registry and may take a while or fail; it never holds the core's
 * start or another app's pools, so it runs here, beside them. A failed launch
 * is reported (its code and npm's reason, in the log and in /readyz) and tried
 * again with a growing delay, so a registry that comes back is used without a
 * restart; the pool is made once its server can be launched.
 */
import { isDeepStrictEqual } from 'node:util';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import type { Logger } from '../logger.js';
import { backoffDelay, type BackoffOptions } from '../shared/backoff.js';
import { isUhlpError } from '../shared/errors.js';
import type { McpServerLaunch } from './sandbox-driver.js';

/** Why a pool's server is not running: a stable code and the reason. */
export interface LaunchProblem {
  readonly code: string;
  readonly message: string;
}

/** A pool waiting for its server, as /readyz and the console show it. */
export interface PendingServerPool {
  readonly app: string;
  readonly pool: string;
  readonly spec: PoolSpec;
  readonly state: 'installing' | 'failed';
  readonly error?: LaunchProblem;
}

export interface ServerPoolLaunchesOptions {
  /** The server a pool runs, its package installed first; undefined when the app declares none for it. */
  launch(app: LoadedApp, spec: PoolSpec): Promise<McpServerLaunch | undefined>;
  /** Called once a pool's server can be launched: the pool is made now. */
  launched(key: string, app: LoadedApp, spec: PoolSpec, launch: McpServerLaunch): void;
  readonly logger: Logger;
  /** Waits between tries of a failed launch. @defaultValue 10 s doubling to 5 minutes */
  readonly retry?: BackoffOptions;
}

interface Entry {
  app: LoadedApp;
  readonly spec: PoolSpec;
  state: 'installing' | 'failed';
  problem?: LaunchProblem;
  tries: number;
  timer?: NodeJS.Timeout;
  /** The try under way; resolves when it ended, either way. */
  attempt: Promise<void>;
}

const DEFAULT_RETRY: BackoffOptions = { initialMs: 10_000, maxMs: 300_000 };

export class ServerPoolLaunches {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly options: ServerPoolLaunchesOptions) {}

  /** Launches the pool's server, unless the same spec is launching already. */
  want(key: string, app: LoadedApp, spec: PoolSpec): void {
    const current = this.entries.get(key);
    if (current !== undefined && isDeepStrictEqual(current.spec, spec)) {
      current.app = app;
      return;
    }
    this.cancel(key);
    const entry: Entry = { app, spec, state: 'installing', tries: 0, attempt: Promise.resolve() };
    this.entries.set(key, entry);
    this.try(key, entry);
  }

  /** Forgets a pool no snapshot wants any more (or whose spec changed). */
  cancel(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    clearTimeout(entry.timer);
    this.entries.delete(key);
  }

  /** The keys of the pools waiting for their server. */
  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /** Resolves once no launch is under way (each ended in a pool or a failure). */
  async settled(): Promise<void> {
    for (;;) {
      const running = [...this.entries.values()].filter((entry) => entry.state === 'installing');
      if (running.length === 0) return;
      await Promise.all(running.map((entry) => entry.attempt));
    }
  }

  /** Why the pool's server is not running, or undefined when it is not waiting. */
  problem(key: string): LaunchProblem | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    return entry.problem ?? { code: 'UHLP_MCP_SERVER_UNAVAILABLE', message: "its server's package is being installed" };
  }

  pending(): PendingServerPool[] {
    return [...this.entries.values()].map((entry) => ({
      app: entry.app.id,
      pool: entry.spec.name,
      spec: entry.spec,
      state: entry.state,
      ...(entry.problem !== undefined ? { error: entry.problem } : {}),
    }));
  }

  close(): void {
    for (const key of [...this.entries.keys()]) this.cancel(key);
  }

  private try(key: string, entry: Entry): void {
    entry.state = 'installing';
    entry.timer = undefined;
    entry.attempt = this.options.launch(entry.app, entry.spec).then(
      (launch) => {
        if (this.entries.get(key) !== entry) return;
        this.entries.delete(key);
        if (launch !== undefined) this.options.launched(key, entry.app, entry.spec, launch);
      },
      (error: unknown) => {
        if (this.entries.get(key) !== entry) return;
        const problem: LaunchProblem = isUhlpError(error)
          ? { code: error.code, message: error.message }
          : { code: 'UHLP_MCP_SERVER_UNAVAILABLE', message: error instanceof Error ? error.message : String(error) };
        const delayMs = backoffDelay(entry.tries, this.options.retry ?? DEFAULT_RETRY);
        entry.tries += 1;
        entry.state = 'failed';
        entry.problem = problem;
        this.options.logger.error(
          { code: problem.code, app: entry.app.id, pool: entry.spec.name, err: problem.message, ...(isUhlpError(error) ? { details: error.details } : {}), retryInMs: delayMs },
          "the MCP server of the pool cannot be launched; the pool waits, and its launch is tried again",
        );
        entry.timer = setTimeout(() => {
          if (this.entries.get(key) === entry) this.try(key, entry);
        }, delayMs);
        entry.timer.unref();
      },
    );
  }
}
