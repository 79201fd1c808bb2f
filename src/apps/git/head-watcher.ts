/**
 * Watches the HEAD of a definitions repository and reports each new commit, so
 * the registry can hot-reload. It polls HEAD from the repository's files (cheap,
 * and sees commits made by any process: a state diff, an operator's `git
 * commit`), with `git rev-parse HEAD` when the files are not plain, and can
 * also `git pull --ff-only` a remote on its own interval. Polls never overlap,
 * and `onChange` is awaited before the next one, so a reload is never raced by
 * the next change. Failures go to `onError`; the watcher keeps going.
 */
import path from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { HeadRefReader } from './head-ref-reader.js';
import { gitEnv } from './git-env.js';

export interface HeadChange {
  /** The HEAD seen before; undefined for the first reading. */
  previous: string | undefined;
  current: string;
}

export interface HeadWatcherOptions {
  /** The repository (or a directory inside it). */
  dir: string;
  /** Time between two readings of HEAD. @defaultValue 1000 */
  intervalMs?: number;
  /** Also pull a remote; off when omitted. */
  pull?: {
    /** Remote name or URL (`origin`, `file:///srv/defs.git`). */
    remote: string;
    /** Branch to pull. @defaultValue the remote's default (plain `git pull --ff-only <remote>`) */
    branch?: string;
    /** Time between two pulls. @defaultValue 30000 */
    intervalMs?: number;
  };
  /** Called with each new HEAD (not for the first reading). Awaited. */
  onChange: (change: HeadChange) => void | Promise<void>;
  /** Told about failed readings, pulls and throwing `onChange`. @defaultValue ignore them */
  onError?: (error: Error) => void;
}

export class HeadWatcher {
  private readonly git: SimpleGit;
  private readonly intervalMs: number;
  private readonly pullIntervalMs: number;
  private head: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private lastPull = 0;
  private refs: HeadRefReader | undefined;

  constructor(private readonly options: HeadWatcherOptions) {
    // `git pull` passes the remote on to `git fetch` without --end-of-options: an option-like value would run as one.
    for (const value of [options.pull?.remote, options.pull?.branch]) {
      if (value !== undefined && (value.startsWith('-') || /[\s\0]/.test(value))) throw new Error(`refusing to pull "${value.slice(0, 80)}": not a remote or branch name`);
    }
    this.git = simpleGit({ baseDir: options.dir }).env(gitEnv());
    this.intervalMs = options.intervalMs ?? 1000;
    this.pullIntervalMs = options.pull?.intervalMs ?? 30_000;
  }

  /** The HEAD last seen. */
  get current(): string | undefined {
    return this.head;
  }

  /** Reads HEAD once (failing if it cannot) and starts polling; resolves to that HEAD. */
  async start(): Promise<string> {
    const [gitDir, commonDir] = (await this.git.raw(['rev-parse', '--absolute-git-dir', '--git-common-dir'])).trim().split('\n');
    if (gitDir && commonDir) this.refs = new HeadRefReader(gitDir, path.resolve(this.options.dir, commonDir));
    this.head = await this.readHead();
    this.stopped = false;
    this.lastPull = Date.now();
    this.schedule();
    return this.head;
  }

  /** Stops polling and waits for a poll in progress to finish. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /**
   * Pulls the remote once, now, and fails when it cannot: the core's first pull, before it
   * loads the apps, so that a remote that cannot be pulled stops the start instead of a
   * warning on the first interval, and what the remote holds is served from the start.
   */
  async pullNow(): Promise<void> {
    if (!this.options.pull) return;
    const { remote, branch } = this.options.pull;
    this.lastPull = Date.now();
    await this.git.raw(['pull', '--ff-only', '--quiet', remote, ...(branch ? [branch] : [])]);
  }

  /** One poll now (pulling first when a pull is configured); resolves to HEAD after it. */
  async checkNow(options: { pull?: boolean } = {}): Promise<string | undefined> {
    await this.running;
    this.running = this.poll(options.pull ?? this.options.pull !== undefined);
    await this.running;
    return this.head;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const pullDue = this.options.pull !== undefined && Date.now() - this.lastPull >= this.pullIntervalMs;
      this.running = this.poll(pullDue).finally(() => this.schedule());
    }, this.intervalMs);
    // The server keeps the process alive; a watcher alone must not.
    this.timer.unref();
  }

  private async poll(pull: boolean): Promise<void> {
    if (pull && this.options.pull) {
      try {
        await this.pullNow();
      } catch (error) {
        this.report(error);
      }
    }
    let current: string;
    try {
      current = await this.readHead();
    } catch (error) {
      this.report(error);
      return;
    }
    if (current === this.head) return;
    const previous = this.head;
    this.head = current;
    try {
      await this.options.onChange({ previous, current });
    } catch (error) {
      this.report(error);
    }
  }

  private async readHead(): Promise<string> {
    const fromFiles = await this.refs?.read().catch(() => undefined);
    if (fromFiles !== undefined) return fromFiles;
    const head = (await this.git.raw(['rev-parse', '--verify', 'HEAD'])).trim();
    if (!/^[0-9a-f]{40,64}$/.test(head)) throw new Error(`git rev-parse HEAD answered "${head.slice(0, 80)}"`);
    return head;
  }

  private report(error: unknown): void {
    this.options.onError?.(error instanceof Error ? error : new Error(String(error)));
  }
}
