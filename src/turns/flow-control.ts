/**
 * Flow control per key, the pipeline's stage after the rate limit: the route's
 * flow declaration (handed by its source on the TurnEvent) and then the
 * component's, each in the order
 *
 *   debounce -> throttle -> concurrency
 *
 * Debounce keeps only the last event of a burst: each marks itself the latest
 * of its key and waits the period; one that is no longer the latest answers
 * 202 `UHLP_DEBOUNCED` without running. Throttle and concurrency are gates in
 * the runtime store (state/flow-store.ts): an event waits in the gate's queue,
 * priority first, then arrival, polling the store (and woken at once when a
 * slot of this core frees up), up to maxWaitMs, then `UHLP_FLOW_WAIT_TIMEOUT`.
 * A throttle's slot lasts its period and is never given back (it counts a
 * start); a concurrency slot is a lease renewed while the turn runs and freed
 * when it ends, so a dead core's slots free up when their lease lapses.
 * Throttle comes before concurrency so that an event waiting for a start
 * holds no running slot.
 *
 * The concurrency slots an event took (its gates' keys, as the event's
 * expressions gave them) go with its turn: a workflow run keeps them on its
 * record, and its resumption (an approval's answer, a restart on another
 * core, a replay) takes the same slots again through `hold` before it goes on.
 */
import { randomUUID } from 'node:crypto';
import type { FlowSpec } from '../apps/schema/flow-schema.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import type { Metrics } from '../metrics.js';
import { UhlpError } from '../shared/errors.js';
import type { FlowGate, FlowStore } from '../state/flow-store.js';
import { flowEventViewOf } from './flow-event-view.js';
import { flowKeyOf, flowPriorityOf, parseFlowExpression, type FlowEventView, type FlowExpression } from './flow-expression.js';

/** How long a concurrency slot lasts unless renewed; renewed every third of it while the turn runs. */
export const FLOW_SLOT_LEASE_MS = 30_000;
/** How long a waiting event keeps its place unless it polls again (its core died). */
export const FLOW_WAIT_LEASE_MS = 5_000;
/** The longest pause between two polls of a waiting event. */
const MAX_POLL_MS = 100;

/** A route's flow declaration, as its source hands it to the pipeline. */
export interface RouteFlow {
  /** The route's label: `http POST /orders/:id`, `queue:orders`. */
  readonly scope: string;
  readonly spec: FlowSpec;
}

/** The turn's answer when a later event of its debounce key runs in its place. */
export function debouncedAnswer(periodMs: number): FinalResponse {
  return {
    status: 202,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code: 'UHLP_DEBOUNCED', message: `a later event of the same key came within ${periodMs} ms and runs in this one's place` }),
  };
}

export interface FlowControlDeps {
  readonly store: FlowStore;
  readonly metrics: Metrics;
}

/** A concurrency slot an event took: enough to take the same one again later, without the event. */
export interface FlowSlot {
  /** The route's label, or `component:<id>`. */
  readonly scope: string;
  /** The key the event's expression gave. */
  readonly key: string;
  readonly limit: number;
  readonly maxWaitMs: number;
  readonly priority: number;
}

interface Admitted {
  /** Gives back what the event holds (its concurrency slots); idempotent. */
  readonly release: () => Promise<void>;
  /** The concurrency slot held. */
  readonly slot: FlowSlot;
}

export class FlowControl {
  /** Local waiters per gate, woken when a slot of this core frees up (other cores' are found by polling). */
  private readonly wakers = new Map<string, Set<() => void>>();

  constructor(private readonly deps: FlowControlDeps) {}

  /**
   * Runs `turn` once the event passes every declared flow; the debounced answer
   * when a later event replaced it. `waited` hears how long the event waited (ms) before its turn began;
   * `turn` is handed the concurrency slots the event holds.
   */
  async run(
    appId: string,
    flows: readonly RouteFlow[],
    requestDataJson: string,
    turn: (slots: readonly FlowSlot[]) => Promise<FinalResponse>,
    waited?: (ms: number) => void,
  ): Promise<FinalResponse> {
    const arrived = performance.now();
    const view = flowEventViewOf(requestDataJson);
    const holder = randomUUID();
    const held: Admitted[] = [];
    try {
      for (const flow of flows) {
        const admitted = await this.admit(appId, flow, view, holder);
        if (admitted === 'debounced') return debouncedAnswer(flow.spec.debounce!.periodMs);
        if (admitted !== undefined) held.push(admitted);
      }
      waited?.(Math.round((performance.now() - arrived) * 100) / 100);
      return await turn(held.map((admitted) => admitted.slot));
    } finally {
      // The component's slots before the route's: the reverse of taking them.
      for (const admitted of held.reverse()) await admitted.release().catch(() => {});
    }
  }

  /**
   * Runs `work` once the slots an earlier event took (`run` handed them to its
   * turn) are taken again, waiting at their gates like any event, in the same
   * order; gives them back when `work` ends. UHLP_FLOW_WAIT_TIMEOUT past a slot's maxWaitMs.
   */
  async hold<T>(appId: string, slots: readonly FlowSlot[], work: () => Promise<T>): Promise<T> {
    const holder = randomUUID();
    const held: Admitted[] = [];
    try {
      for (const slot of slots) held.push(await this.take(appId, slot, holder));
      return await work();
    } finally {
      for (const admitted of held.reverse()) await admitted.release().catch(() => {});
    }
  }

  private async admit(app: string, flow: RouteFlow, view: FlowEventView, holder: string): Promise<Admitted | 'debounced' | undefined> {
    const { spec, scope } = flow;
    const priority = flowPriorityOf(compiled(spec.priority), view);
    if (spec.debounce !== undefined) {
      const gate: FlowGate = { app, scope, kind: 'debounce', key: flowKeyOf(compiled(spec.debounce.key), view) };
      const { periodMs } = spec.debounce;
      await this.deps.store.markLatest(gate, holder, periodMs * 2 + 1000);
      await sleep(periodMs);
      if ((await this.deps.store.latest(gate)) !== holder) {
        this.deps.metrics.flowDebounced.labels(app, scope).inc();
        return 'debounced';
      }
    }
    if (spec.throttle !== undefined) {
      const { limit, periodMs, maxWaitMs } = spec.throttle;
      const gate: FlowGate = { app, scope, kind: 'throttle', key: flowKeyOf(compiled(spec.throttle.key), view) };
      // A start counts for its period whatever the turn does: nothing is given back.
      await this.wait(gate, holder, { limit, holdMs: periodMs, priority, maxWaitMs });
    }
    if (spec.concurrency === undefined) return undefined;
    const { limit, maxWaitMs } = spec.concurrency;
    return this.take(app, { scope, key: flowKeyOf(compiled(spec.concurrency.key), view), limit, maxWaitMs, priority }, holder);
  }

  /** Waits for a concurrency slot and holds it (its lease renewed) until released. */
  private async take(app: string, slot: FlowSlot, holder: string): Promise<Admitted> {
    const { scope, key, limit, maxWaitMs, priority } = slot;
    const gate: FlowGate = { app, scope, kind: 'concurrency', key };
    await this.wait(gate, holder, { limit, holdMs: FLOW_SLOT_LEASE_MS, priority, maxWaitMs });
    const renewal = setInterval(() => {
      this.deps.store.renewGate(gate, holder, FLOW_SLOT_LEASE_MS).catch(() => {
        // A missed renewal is retried at the next tick; the lease outlasts two of them.
      });
    }, FLOW_SLOT_LEASE_MS / 3);
    renewal.unref();
    let released = false;
    return {
      slot,
      release: async () => {
        if (released) return;
        released = true;
        clearInterval(renewal);
        try {
          await this.deps.store.leaveGate(gate, holder);
        } finally {
          this.wake(gate);
        }
      },
    };
  }

  /** Waits for a slot of `gate`, polling the store; refuses the event past maxWaitMs. */
  private async wait(gate: FlowGate, holder: string, options: { limit: number; holdMs: number; priority: number; maxWaitMs: number }): Promise<void> {
    const started = performance.now();
    const labels = { app: gate.app, route: gate.scope, kind: gate.kind };
    let waiting = false;
    let pause = 5;
    try {
      for (;;) {
        const entry = await this.deps.store.enterGate(gate, holder, { limit: options.limit, holdMs: options.holdMs, priority: options.priority, waitTtlMs: FLOW_WAIT_LEASE_MS });
        if (entry.granted) {
          this.deps.metrics.flowWaitSeconds.observe({ ...labels, outcome: 'started' }, (performance.now() - started) / 1000);
          return;
        }
        if (!waiting) {
          waiting = true;
          this.deps.metrics.flowWaiting.inc(labels);
        }
        const left = options.maxWaitMs - (performance.now() - started);
        if (left <= 0) {
          await this.deps.store.leaveGate(gate, holder).catch(() => {});
          this.deps.metrics.flowWaitSeconds.observe({ ...labels, outcome: 'timeout' }, (performance.now() - started) / 1000);
          throw new UhlpError('UHLP_FLOW_WAIT_TIMEOUT', `waited ${options.maxWaitMs} ms at the ${gate.kind} gate of ${gate.scope} without a slot`, {
            route: gate.scope,
            kind: gate.kind,
            position: entry.position,
            retryAfterMs: Math.max(1000, entry.retryAfterMs),
          });
        }
        // A throttle knows when its next start frees up; a concurrency slot may free up any time.
        const due = gate.kind === 'throttle' && entry.retryAfterMs > 0 ? entry.retryAfterMs : pause;
        await this.sleepOrWake(gate, Math.min(left, due, MAX_POLL_MS) * (0.8 + Math.random() * 0.4));
        pause = Math.min(pause * 2, MAX_POLL_MS);
      }
    } catch (error) {
      if (!(error instanceof UhlpError && error.code === 'UHLP_FLOW_WAIT_TIMEOUT')) await this.deps.store.leaveGate(gate, holder).catch(() => {});
      throw error;
    } finally {
      if (waiting) this.deps.metrics.flowWaiting.dec(labels);
    }
  }

  private sleepOrWake(gate: FlowGate, ms: number): Promise<void> {
    const id = gateId(gate);
    return new Promise((resolve) => {
      let wakers = this.wakers.get(id);
      if (wakers === undefined) this.wakers.set(id, (wakers = new Set()));
      const done = (): void => {
        clearTimeout(timer);
        wakers.delete(done);
        if (wakers.size === 0 && this.wakers.get(id) === wakers) this.wakers.delete(id);
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, ms));
      wakers.add(done);
    });
  }

  /** Wakes this core's waiters of `gate` to ask again. */
  private wake(gate: FlowGate): void {
    const wakers = this.wakers.get(gateId(gate));
    if (wakers !== undefined) for (const done of [...wakers]) done();
  }
}

/** Expressions parsed once per text (they were checked when the app loaded). */
const parsed = new Map<string, FlowExpression>();

function compiled(text: string | undefined): FlowExpression | undefined {
  if (text === undefined) return undefined;
  let expression = parsed.get(text);
  if (expression === undefined) {
    expression = parseFlowExpression(text);
    if (parsed.size > 10_000) parsed.clear();
    parsed.set(text, expression);
  }
  return expression;
}

function gateId(gate: FlowGate): string {
  return JSON.stringify([gate.app, gate.scope, gate.kind, gate.key]);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
