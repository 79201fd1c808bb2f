/**
 * The cs-js invoker's engine: V8 isolates (isolated-vm) holding compiled
 * bundles, one activation at a time each.
 *
 * A function version gets up to `maxConcurrency` isolates on this replica (the
 * semaphore of src/shared/keyed-semaphore.ts), kept warm between activations: a warm call
 * is one call into an isolate that already holds the module. Each isolate has
 * the manifest's `memoryMb` as its heap budget and runs only JavaScript: no
 * require, no import, no process, no timers, no network, only the `cs` object
 * of isolate-bootstrap.ts. At `deadline_ms` the isolate is disposed (an endless
 * loop included) and the activation fails with UHLP_CS_TIMEOUT; an isolate over
 * its budget is disposed by isolated-vm and the activation fails with
 * UHLP_CS_MEMORY_LIMIT. Either way only that isolate goes: the runner keeps
 * serving, and the next activation of the version compiles a fresh one.
 */
import type { Callback, Context, Isolate, Reference } from 'isolated-vm';
import { UhlpError, type ErrorCode } from '../../shared/errors.js';
import { FunctionNotFoundError, ScriptLoadFailedError } from '../../shared/runner-errors.js';
import type { VerifiedBundle } from '../../contract/cs-bundle/function-bundle.js';
import { dispatchCsCall, type CsBackend, type CsLogLine } from './cs-host.js';
import type { FunctionManifest } from '../../contract/cs-bundle/function-manifest.js';
import { ISOLATE_BOOTSTRAP } from './isolate-bootstrap.js';
import { KeyedSemaphore } from '../../shared/keyed-semaphore.js';

type IvmModule = typeof import('isolated-vm');

export interface Activation {
  /** tenant, namespace, function and version: what `maxConcurrency` counts per. */
  readonly concurrencyKey: string;
  readonly bundle: VerifiedBundle;
  /** The event as JSON text. */
  readonly eventJson: string;
  /** `ctx` as JSON text (deadline_ms included). */
  readonly ctxJson: string;
  /** Epoch ms at which the isolate is cancelled. */
  readonly deadlineMs: number;
  readonly backend: CsBackend;
}

/** What the handler did; the activation's log lines are in `logs` whatever happened. */
export type ActivationResult =
  | { readonly kind: 'value'; readonly value: unknown }
  | { readonly kind: 'thrown'; readonly thrown: { message: string; code?: string; status?: number; details?: unknown; stack?: string } }
  | { readonly kind: 'unserializable' };

export interface ActivationOutcome {
  readonly result: ActivationResult;
  readonly logs: CsLogLine[];
  /** Whether this activation compiled the bundle (no warm isolate was free). */
  readonly cold: boolean;
}

export interface IsolateRuntimeOptions {
  /** Log lines kept per activation; later ones are counted, not kept. @defaultValue 1000 */
  readonly maxLogLines?: number;
  /** Idle isolates kept across all versions; the least recently used go first. @defaultValue 256 */
  readonly maxIdleIsolates?: number;
  /** Loads isolated-vm. @defaultValue a dynamic import of `isolated-vm` */
  readonly loadEngine?: () => Promise<IvmModule>;
}

interface Slot {
  readonly isolate: Isolate;
  readonly context: Context;
  readonly start: Reference<(eventJson: string, ctxJson: string) => void>;
  readonly collect: Reference<() => string | undefined>;
  readonly wait: Reference<() => Promise<string>>;
  /** The activation running in it, if any: `cs` calls go to its backend and logs. */
  current: Running | undefined;
  /** Why the invoker disposed it, when it did. */
  ended?: 'timeout' | 'memory' | 'crash';
}

/** An isolate with the bootstrap and no bundle; `state` is what its host callbacks read. */
interface Blank {
  readonly isolate: Isolate;
  readonly context: Context;
  readonly api: Reference<Record<string, unknown>>;
  readonly memoryMb: number;
  readonly state: { current?: Running; manifest?: FunctionManifest; ended?: 'timeout' | 'memory' | 'crash' };
}

interface Running {
  readonly activation: Activation;
  readonly logs: CsLogLine[];
  dropped: number;
}

let engine: Promise<IvmModule> | undefined;

function loadIsolatedVm(): Promise<IvmModule> {
  engine ??= import('isolated-vm').then((module) => ((module as { default?: IvmModule }).default ?? module) as IvmModule);
  return engine;
}

export class IsolateRuntime {
  private readonly semaphore = new KeyedSemaphore();
  /** Warm isolates by concurrency key and sha256, most recently used last. */
  private readonly idle = new Map<string, Slot[]>();
  private idleCount = 0;
  private readonly maxLogLines: number;
  private readonly maxIdle: number;
  private readonly loadEngine: () => Promise<IvmModule>;
  private spare: Blank | undefined;
  private spareTimer: NodeJS.Immediate | undefined;
  private disposed = false;

  constructor(options: IsolateRuntimeOptions = {}) {
    this.maxLogLines = options.maxLogLines ?? 1000;
    this.maxIdle = options.maxIdleIsolates ?? 256;
    this.loadEngine = options.loadEngine ?? loadIsolatedVm;
  }

  /** Isolates kept warm now. */
  get idleIsolates(): number {
    return this.idleCount;
  }

  /** Runs one activation. Throws UHLP_CS_TIMEOUT, UHLP_CS_MEMORY_LIMIT, UHLP_CS_CONCURRENCY_LIMIT or a load failure. */
  async run(activation: Activation): Promise<ActivationOutcome> {
    const { manifest } = activation.bundle;
    const acquired = this.semaphore.acquire(activation.concurrencyKey, manifest.limits.maxConcurrency, activation.deadlineMs - Date.now());
    const release = acquired instanceof Promise ? await acquired : acquired;
    if (release === undefined) {
      throw new UhlpError(
        'UHLP_CS_CONCURRENCY_LIMIT',
        `the function version runs ${manifest.limits.maxConcurrency} activation(s) at once (maxConcurrency) and none ended before the deadline`,
        { maxConcurrency: manifest.limits.maxConcurrency },
      );
    }
    const running: Running = { activation, logs: [], dropped: 0 };
    const poolKey = `${activation.concurrencyKey}\0${activation.bundle.sha256}`;
    let slot = this.takeIdle(poolKey);
    const cold = slot === undefined;
    let creating: Isolate | undefined;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      const target = slot?.isolate ?? creating;
      if (slot !== undefined) slot.ended = 'timeout';
      disposeQuietly(target);
    }, Math.max(0, activation.deadlineMs - Date.now()));
    try {
      if (slot === undefined) {
        slot = await this.createSlot(activation.bundle, running, activation.deadlineMs, (isolate) => (creating = isolate));
        if (timedOut) throw timeoutError(manifest);
      }
      slot.current = running;
      // Synchronous calls on this thread: a handler that needs no host call is done after
      // them, without a hop to isolated-vm's threads. The timeout covers code that never yields.
      const syncTimeout = Math.max(1, activation.deadlineMs - Date.now());
      slot.start.applySync(undefined, [activation.eventJson, activation.ctxJson], { timeout: syncTimeout });
      let text = slot.collect.applySync(undefined, [], { timeout: syncTimeout });
      if (text === undefined) text = (await slot.wait.apply(undefined, [], { result: { promise: true } })) as string;
      if (timedOut) throw timeoutError(manifest);
      slot.current = undefined;
      const result = parseResult(text);
      this.putIdle(poolKey, slot);
      return { result, logs: this.closeLogs(running), cold };
    } catch (error) {
      const isolate = slot?.isolate ?? creating;
      const disposedByLimit = isolate !== undefined && slot?.ended === undefined && isolate.isDisposed && !timedOut;
      disposeQuietly(isolate);
      let failure: unknown = error;
      if (timedOut || /execution timed out/i.test(messageOf(error))) failure = timeoutError(manifest);
      else if (disposedByLimit || isMemoryError(error)) {
        failure = new UhlpError('UHLP_CS_MEMORY_LIMIT', `the activation went over its memory budget of ${manifest.limits.memoryMb} MiB; its isolate was terminated`, {
          memoryMb: manifest.limits.memoryMb,
        });
      }
      // The lines it logged before it failed are still the activation's logs.
      if (typeof failure === 'object' && failure !== null) Object.defineProperty(failure, 'csLogs', { value: this.closeLogs(running), enumerable: false });
      throw failure;
    } finally {
      clearTimeout(timer);
      if (slot !== undefined) slot.current = undefined;
      release();
    }
  }

  /** Disposes every warm isolate. */
  dispose(): void {
    this.disposed = true;
    if (this.spareTimer !== undefined) clearImmediate(this.spareTimer);
    disposeQuietly(this.spare?.isolate);
    this.spare = undefined;
    for (const slots of this.idle.values()) for (const slot of slots) disposeQuietly(slot.isolate);
    this.idle.clear();
    this.idleCount = 0;
  }

  private takeIdle(poolKey: string): Slot | undefined {
    const slots = this.idle.get(poolKey);
    const slot = slots?.pop();
    if (slot === undefined) return undefined;
    this.idleCount--;
    if (slots!.length === 0) this.idle.delete(poolKey);
    // Most recently used last: re-inserted on release.
    return slot.isolate.isDisposed ? undefined : slot;
  }

  private putIdle(poolKey: string, slot: Slot): void {
    if (slot.isolate.isDisposed) return;
    let slots = this.idle.get(poolKey);
    if (slots === undefined) {
      slots = [];
      this.idle.set(poolKey, slots);
    } else {
      // Keep map order as recency order for eviction.
      this.idle.delete(poolKey);
      this.idle.set(poolKey, slots);
    }
    slots.push(slot);
    this.idleCount++;
    while (this.idleCount > this.maxIdle) {
      const oldestKey = this.idle.keys().next().value as string;
      const oldest = this.idle.get(oldestKey)!;
      disposeQuietly(oldest.shift()?.isolate);
      this.idleCount--;
      if (oldest.length === 0) this.idle.delete(oldestKey);
    }
  }

  private async createSlot(bundle: VerifiedBundle, first: Running, deadlineMs: number, onIsolate: (isolate: Isolate) => void): Promise<Slot> {
    let ivm: IvmModule;
    try {
      ivm = await this.loadEngine();
    } catch (error) {
      throw new UhlpError('UHLP_CS_RUNTIME_UNAVAILABLE', `the isolate engine cannot be loaded here: ${(error as Error).message}`);
    }
    const { manifest, files } = bundle;
    const blank = this.takeBlank(ivm, manifest.limits.memoryMb);
    const { isolate, context, api, state } = blank;
    onIsolate(isolate);
    state.manifest = manifest;
    state.current = first;
    const module = compileModule(isolate, files.functionJs, bundle.sha256);
    try {
      module.instantiateSync(context, (specifier: string) => {
        throw new Error(`cs-js bundles cannot import modules (import of "${specifier.slice(0, 200)}")`);
      });
    } catch (error) {
      if (isolate.isDisposed) throw error;
      throw new ScriptLoadFailedError(`function.js cannot be linked: ${messageOf(error)}`);
    }
    try {
      module.evaluateSync({ timeout: Math.max(1, deadlineMs - Date.now()) });
    } catch (error) {
      if (isolate.isDisposed || /execution timed out/i.test(messageOf(error))) throw error;
      throw new ScriptLoadFailedError(`function.js failed while loading: ${messageOf(error)}`);
    }
    const handler = module.namespace.getSync(manifest.handler, { reference: true });
    if (handler.typeof !== 'function') {
      throw new FunctionNotFoundError(`function.js exports no function "${manifest.handler}" (the manifest's handler)`, { handler: manifest.handler });
    }
    api.getSync('install', { reference: true }).applySync(undefined, [handler.derefInto()]);
    return {
      isolate,
      context,
      start: api.getSync('start', { reference: true }) as Slot['start'],
      collect: api.getSync('collect', { reference: true }) as Slot['collect'],
      wait: api.getSync('wait', { reference: true }) as Slot['wait'],
      get current() {
        return state.current;
      },
      set current(value) {
        state.current = value;
      },
      get ended() {
        return state.ended;
      },
      set ended(value) {
        state.ended = value;
      },
    };
  }

  /**
   * A fresh isolate with its context and the bootstrap, no bundle yet: the
   * spare made after the last cold start when its memory budget matches (so a
   * never-seen version only compiles its module), else a new one. Creating an
   * isolate is most of a cold start; the spare is made after the answer is sent.
   */
  private takeBlank(ivm: IvmModule, memoryMb: number): Blank {
    const spare = this.spare;
    this.spare = undefined;
    if (spare !== undefined && spare.memoryMb === memoryMb && !spare.isolate.isDisposed) {
      this.makeSpare(ivm, memoryMb);
      return spare;
    }
    disposeQuietly(spare?.isolate);
    this.makeSpare(ivm, memoryMb);
    return this.blank(ivm, memoryMb);
  }

  private makeSpare(ivm: IvmModule, memoryMb: number): void {
    if (this.spareTimer !== undefined || this.disposed) return;
    this.spareTimer = setImmediate(() => {
      this.spareTimer = undefined;
      if (this.spare === undefined && !this.disposed) this.spare = this.blank(ivm, memoryMb);
    });
    this.spareTimer.unref();
  }

  private blank(ivm: IvmModule, memoryMb: number): Blank {
    const state: Blank['state'] = {};
    const isolate = new ivm.Isolate({
      memoryLimit: memoryMb,
      // V8 could not unwind cleanly: isolated-vm quarantines the isolate; we never reuse it.
      onCatastrophicError: () => {
        state.ended = 'crash';
      },
    });
    // Synchronous steps on this thread: each asynchronous one would be a hop to isolated-vm's threads and back.
    const context = isolate.createContextSync();
    // A Reference, not a Callback: the isolate awaits the host's promise (apply with result.promise).
    const hostCall = new ivm.Reference((op: unknown, json: unknown) => hostAnswer(state.manifest, state.current, op, json));
    // Synchronous: the line is recorded before the bundle goes on. A queued (ignored) callback could run after
    // the activation ended, when there is no activation left to record it for, and the line was lost.
    const hostLog = new ivm.Callback((level: string, text: string) => this.record(state.current, level, text), { sync: true }) as Callback;
    const api = context.evalClosureSync(ISOLATE_BOOTSTRAP, [hostCall, hostLog], { result: { reference: true } }) as unknown as Reference<Record<string, unknown>>;
    return { isolate, context, api, memoryMb, state };
  }

  private record(running: Running | undefined, level: string, text: string): void {
    if (running === undefined) return;
    if (running.logs.length >= this.maxLogLines) {
      running.dropped++;
      return;
    }
    const safeLevel = level === 'warn' || level === 'error' ? level : 'info';
    running.logs.push({ level: safeLevel, ts: Date.now(), msg: typeof text === 'string' ? text : String(text) });
  }

  private closeLogs(running: Running): CsLogLine[] {
    if (running.dropped > 0) running.logs.push({ level: 'warn', ts: Date.now(), msg: `${running.dropped} more log line(s) dropped (limit ${this.maxLogLines})` });
    return running.logs;
  }
}

/** The activation's logs so far, for an activation that failed (timeout, memory): kept by the caller. */
export function logsOf(error: unknown): CsLogLine[] | undefined {
  return (error as { csLogs?: CsLogLine[] } | undefined)?.csLogs;
}

/** How a bundle's stack frames name its files: `cs-js:<sha256, 12 digits>/function.js:<line>:<column>`. */
export function bundleStackPrefix(sha256: string): string {
  return `cs-js:${sha256.slice(0, 12)}/`;
}

function compileModule(isolate: Isolate, source: string, sha256: string) {
  try {
    return isolate.compileModuleSync(source, { filename: `${bundleStackPrefix(sha256)}function.js` });
  } catch (error) {
    if (isolate.isDisposed) throw error;
    throw new ScriptLoadFailedError(`function.js does not compile: ${messageOf(error)}`);
  }
}

/** One `cs` call from the isolate, answered as JSON text `{ok, value}` or `{ok: false, code, message, ...}`. */
async function hostAnswer(manifest: FunctionManifest | undefined, running: Running | undefined, op: unknown, json: unknown): Promise<string> {
  // The two refusals below carry no status, as they always have: the first reaches no answer (the
  // activation is over), and a handler that lets the second through has answered it as its own error (422).
  if (running === undefined || manifest === undefined) {
    return JSON.stringify({ ok: false, code: 'UHLP_CS_INVALID_ARGUMENT' satisfies ErrorCode, message: 'no activation is running: cs calls after the handler returned are refused' });
  }
  try {
    if (typeof op !== 'string' || typeof json !== 'string') throw new UhlpError('UHLP_CS_INVALID_ARGUMENT', 'malformed host call');
    const args = JSON.parse(json) as unknown;
    if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new UhlpError('UHLP_CS_INVALID_ARGUMENT', 'malformed host call');
    const value = await dispatchCsCall(manifest, running.activation.backend, op, args as Record<string, unknown>);
    return JSON.stringify({ ok: true, value: value ?? null });
  } catch (error) {
    const failure = error as { code?: unknown; message?: unknown; status?: unknown; statusCode?: unknown; details?: unknown };
    if (typeof failure?.code === 'string') {
      const status = typeof failure.statusCode === 'number' ? failure.statusCode : typeof failure.status === 'number' ? failure.status : undefined;
      return JSON.stringify({
        ok: false,
        code: failure.code,
        message: typeof failure.message === 'string' ? failure.message : failure.code,
        ...(status !== undefined ? { status } : {}),
        ...(failure.details !== undefined ? { details: failure.details } : {}),
      });
    }
    return JSON.stringify({ ok: false, code: 'UHLP_INTERNAL' satisfies ErrorCode, message: 'the host call failed' });
  }
}

function parseResult(text: unknown): ActivationResult {
  if (typeof text !== 'string') return { kind: 'unserializable' };
  const parsed = JSON.parse(text) as { value?: unknown; thrown?: ActivationResult & { kind: 'thrown' } extends { thrown: infer T } ? T : never; unserializable?: true };
  if (parsed.thrown !== undefined) return { kind: 'thrown', thrown: parsed.thrown };
  if (parsed.unserializable === true) return { kind: 'unserializable' };
  return { kind: 'value', value: parsed.value ?? null };
}

function timeoutError(manifest: FunctionManifest): UhlpError {
  return new UhlpError('UHLP_CS_TIMEOUT', `the activation ran past its deadline (timeoutMs ${manifest.limits.timeoutMs}); its isolate was cancelled`, {
    timeoutMs: manifest.limits.timeoutMs,
  });
}

function isMemoryError(error: unknown): boolean {
  return /memory limit|out of memory|array buffer allocation failed/i.test(messageOf(error));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function disposeQuietly(isolate: Isolate | undefined): void {
  if (isolate === undefined || isolate.isDisposed) return;
  try {
    isolate.dispose();
  } catch {
    // Already going: nothing left to release.
  }
}
