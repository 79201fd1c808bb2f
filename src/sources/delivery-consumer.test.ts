import { afterEach, describe, expect, it } from 'vitest';
import { AppSnapshot, type LoadedApp } from '../apps/app-snapshot.js';
import { validateAppDefinition } from '../apps/validation/validate-app-definition.js';
import { ComponentExecutor } from '../execution/component-executor.js';
import { ExecuteContextWriter } from '../execution/execute-context.js';
import { silentLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import { createRuntimeStore } from '../state/create-runtime-store.js';
import type { DeliveryMessage, DeliveryReader, DeliveryStore, StreamAddress } from '../state/delivery-store.js';
import type { BeginIdempotentOptions, IdempotencyStore, IdempotentClaim, KeptAnswer, StoredResponse } from '../state/idempotency-store.js';
import { MemoryDeliveryStore } from '../state/memory-delivery-store.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import { ComponentTurns } from '../turns/component-turns.js';
import { TurnKeeper } from '../turns/turn-keeper.js';
import { TurnPipeline } from '../turns/turn-pipeline.js';
import type { TurnDecorator } from '../turns/turn-runner.js';
import { UhlpError } from '../shared/errors.js';
import { waitFor } from '../../test/helpers/wait-for.js';
import { DeliveryConsumer } from './delivery-consumer.js';
import type { SourceRoute } from './source-routes.js';

const jobs: StreamAddress = { kind: 'queue', app: 'unit', name: 'jobs' };
const ONCE_KEY = (invocationId: string): string => `queue:jobs:${invocationId}`;

/** An app with one queue route `jobs` (a 1 s lease: the least its pool allows) to component `work`. */
function queueApp(maxAttempts = 20): LoadedApp {
  const result = validateAppDefinition(
    {
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name: 'unit' },
      spec: {
        pools: [{ name: 'p', acquireTimeoutMs: 100, limits: { timeoutMs: 200 } }],
        components: [{ id: 'work', handler: 'JIT', pool: 'p', jit: { script: 'work.js' } }],
        routes: [{ queue: { name: 'jobs', concurrency: 4, maxAttempts, leaseSeconds: 1, backoff: { initialMs: 50, maxMs: 100 } }, component: 'work' }],
      },
    },
    { file: 'apps/unit/app.yaml', appDirName: 'unit', fileExists: () => true },
  );
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return new AppSnapshot('0123456789abcdef', [{ file: 'apps/unit/app.yaml', document: result.document }], []).apps.get('unit')!;
}

/** What a run waits for before it answers: one promise for all of them, or one made for each. */
interface Gate {
  held?: Promise<void>;
  each?: () => Promise<void>;
}

/** The component's turn, answered here (the sandbox the units do without): each run is counted by its invocation id. */
function counting(runs: Map<string, number>, gate: Gate): TurnDecorator {
  return {
    decorate: () => ({
      async run(event) {
        const key = (JSON.parse(event.requestDataJson) as { delivery: { invocationId: string } }).delivery.invocationId;
        runs.set(key, (runs.get(key) ?? 0) + 1);
        await (gate.each?.() ?? gate.held);
        return { status: 200, headers: { 'content-type': 'application/json' }, body: Buffer.from(`{"run":${runs.get(key)}}`) };
      },
    }),
  };
}

/** A store of a core that died after its runs ended: it reads nothing more and its batches never commit. */
function diedAfterRun(inner: DeliveryStore, reads: number): DeliveryStore & { batches: Array<{ ids: readonly string[]; answers: readonly KeptAnswer[] }>; release(): void } {
  const batches: Array<{ ids: readonly string[]; answers: readonly KeptAnswer[] }> = [];
  const held: Array<() => void> = [];
  let left = reads;
  return Object.assign(Object.create(inner) as DeliveryStore, {
    batches,
    /** Lets the test's clean-up stop the consumer: its batches answer, having committed nothing. */
    release: () => held.splice(0).forEach((resolve) => resolve()),
    reader(): DeliveryReader {
      const reader = inner.reader();
      return {
        read: async (address: StreamAddress, consumer: string, count: number, blockMs: number): Promise<DeliveryMessage[]> => {
          if (left <= 0) return new Promise((resolve) => setTimeout(() => resolve([]), blockMs));
          const messages = await reader.read(address, consumer, Math.min(count, left), blockMs);
          left -= messages.length;
          return messages;
        },
        close: () => reader.close(),
      };
    },
    ack: (_address: StreamAddress, ids: readonly string[], answers: readonly KeptAnswer[] = []): Promise<void> => {
      batches.push({ ids, answers });
      return new Promise<void>((resolve) => held.push(resolve));
    },
    reclaim: async (): Promise<DeliveryMessage[]> => [],
    promoteDue: async (): Promise<number> => 0,
  });
}

describe('DeliveryConsumer: once-only records claimed a read at a time and completed with the acknowledgement', () => {
  const closing: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  async function setUp(maxAttempts?: number): Promise<{
    runtime: RuntimeStore;
    delivery: MemoryDeliveryStore;
    runs: Map<string, number>;
    completes: string[];
    /** Each claim of a run that was not made at its read, and each claim of a read: how many keys at once, with their ttls. */
    claims: { single: string[]; many: number[][] };
    /** While `held` is pending, every run waits on it. */
    gate: Gate;
    /** A started consumer; `claimsAt` stands in for the records it claims reads in. */
    consumer: (name: string, store?: DeliveryStore, claimsAt?: IdempotencyStore) => DeliveryConsumer;
  }> {
    const runtime = await createRuntimeStore();
    closing.push(() => runtime.close());
    // Counts completions that bypass the batch: with the answer kept by the source, there are none.
    const completes: string[] = [];
    const claims = { single: [] as string[], many: [] as number[][] };
    const records: IdempotencyStore = Object.assign(Object.create(runtime.idempotency) as IdempotencyStore, {
      completeIdempotent: (appId: string, key: string, response: StoredResponse, ttlMs: number) => {
        completes.push(key);
        return runtime.idempotency.completeIdempotent(appId, key, response, ttlMs);
      },
      beginIdempotent: (appId: string, key: string, options: BeginIdempotentOptions) => {
        claims.single.push(key);
        return runtime.idempotency.beginIdempotent(appId, key, options);
      },
      beginIdempotentMany: (appId: string, many: readonly IdempotentClaim[]) => {
        claims.many.push(many.map((claim) => claim.inFlightTtlMs));
        return runtime.idempotency.beginIdempotentMany(appId, many);
      },
    });
    const gate: Gate = {};
    const delivery = new MemoryDeliveryStore({ idempotency: runtime.idempotency });
    closing.push(() => delivery.close());
    const app = queueApp(maxAttempts);
    const runs = new Map<string, number>();
    const metrics = createMetrics({ defaultMetrics: false });
    const components = new ComponentTurns({
      stages: { turns: new TurnKeeper({ store: runtime.sessions, sessionTtlMs: 60_000 }), metrics },
      sandbox: { executor: new ComponentExecutor({ pool: () => undefined } as unknown as SandboxManager, metrics, silentLogger()), contexts: new ExecuteContextWriter(), mcpEndpoint: () => 'http://127.0.0.1:1/mcp' },
      turnDecorators: [counting(runs, gate)],
    });
    const pipeline = new TurnPipeline({ components, metrics, store: { rateLimits: runtime.rateLimits, idempotency: records }, idempotencyTtlMs: 60_000 });
    const route: SourceRoute = app.sourceRoutes.queues.get('jobs')!;
    const consumer = (name: string, store: DeliveryStore = delivery, claimsAt: IdempotencyStore = records): DeliveryConsumer => {
      const made = new DeliveryConsumer(jobs, { store, records: claimsAt, pipeline, metrics, logger: silentLogger(), consumer: name, lookup: () => ({ app, route }) });
      made.start();
      closing.push(() => made.stop(100));
      return made;
    };
    return { runtime, delivery, runs, completes, claims, gate, consumer };
  }

  it('completes each record in the batch that acknowledges its message, with no script of its own', async () => {
    const { runtime, delivery, runs, completes, consumer } = await setUp();
    const acks: Array<{ ids: readonly string[]; answers: readonly KeptAnswer[] }> = [];
    const store = Object.assign(Object.create(delivery) as DeliveryStore, {
      ack: (address: StreamAddress, ids: readonly string[], answers: readonly KeptAnswer[] = []) => {
        acks.push({ ids: [...ids], answers: [...answers] });
        return delivery.ack(address, ids, answers);
      },
    });
    await delivery.ensureGroup(jobs);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await delivery.publish(jobs, { payload: `{"n":${i}}`, invocationId: `inv-${i}` }));
    consumer('c1', store);
    await waitFor(async () => (await delivery.stats(jobs, Date.now())).depth === 0, { timeoutMs: 5000, what: 'the messages to settle' });
    expect([...runs.values()]).toEqual([1, 1, 1]);
    expect(completes).toEqual([]);
    expect(acks.flatMap((a) => a.ids).sort()).toEqual([...ids].sort());
    // Each answer travels in the same batch as its message's id.
    for (const { ids: batch, answers } of acks) expect(answers.map((a) => a.key).sort()).toEqual(batch.map((id) => ONCE_KEY(`inv-${ids.indexOf(id)}`)).sort());
    for (let i = 0; i < 3; i++) {
      const record = await runtime.idempotency.getIdempotent('unit', ONCE_KEY(`inv-${i}`));
      expect(record?.state === 'completed' && Buffer.from(record.response.body, 'base64').toString()).toBe('{"run":1}');
    }
  });

  it('retries a delivery the runtime store refused as the same attempt: past maxAttempts of refusals it still runs, and never reaches the dead letters', async () => {
    const { delivery, runs, gate, consumer } = await setUp(3);
    // The route allows 3 attempts; the store refuses the first 5 runs, as through a failover.
    let refusals = 5;
    gate.each = async () => {
      if (refusals-- > 0) throw new UhlpError('UHLP_STATE_UNAVAILABLE', 'the runtime store is failing over');
    };
    const attempts: number[] = [];
    const store = Object.assign(Object.create(delivery) as DeliveryStore, {
      retryLater: (address: StreamAddress, message: DeliveryMessage, dueAt: number, charged?: boolean) => {
        attempts.push(message.attempt);
        return delivery.retryLater(address, message, dueAt, charged);
      },
    });
    await delivery.ensureGroup(jobs);
    await delivery.publish(jobs, { payload: '{}', invocationId: 'through-failover' });
    consumer('c1', store);
    await waitFor(async () => (await delivery.stats(jobs, Date.now())).depth === 0, { timeoutMs: 15_000, what: 'the message to run once the store answers' });
    expect(runs.get('through-failover')).toBe(6);
    expect(attempts).toHaveLength(5);
    expect(new Set(attempts)).toEqual(new Set([1]));
    expect(await delivery.deadLetters(jobs, 10)).toEqual([]);
  });

  it('acknowledges a repeat that replayed a kept answer without keeping it again', async () => {
    const { delivery, runs, consumer } = await setUp();
    const acks: Array<readonly KeptAnswer[]> = [];
    const store = Object.assign(Object.create(delivery) as DeliveryStore, {
      ack: (address: StreamAddress, ids: readonly string[], answers: readonly KeptAnswer[] = []) => {
        acks.push([...answers]);
        return delivery.ack(address, ids, answers);
      },
    });
    await delivery.ensureGroup(jobs);
    await delivery.publish(jobs, { payload: '{}', invocationId: 'twice' });
    consumer('c1', store);
    await waitFor(async () => (await delivery.stats(jobs, Date.now())).depth === 0, { timeoutMs: 5000, what: 'the first to settle' });
    await delivery.publish(jobs, { payload: '{}', invocationId: 'twice' });
    await waitFor(async () => acks.length === 2 && (await delivery.stats(jobs, Date.now())).depth === 0, { timeoutMs: 5000, what: 'the repeat to settle' });
    expect(runs.get('twice')).toBe(1);
    expect(acks.map((answers) => answers.length)).toEqual([1, 0]);
  });

  it('a core that dies between the run and its batch: the record stays in flight, a repeat never runs while it lives, and after the lease the message runs again once', async () => {
    const { runtime, delivery, runs, consumer } = await setUp();
    await delivery.ensureGroup(jobs);
    const dying = diedAfterRun(delivery, 1);
    await delivery.publish(jobs, { payload: '{}', invocationId: 'crash' });
    consumer('dies', dying);
    closing.push(async () => dying.release());
    await waitFor(async () => dying.batches.length === 1, { timeoutMs: 5000, what: 'the run to end and its batch to leave' });
    expect(dying.batches[0]!.answers.map((a) => a.key)).toEqual([ONCE_KEY('crash')]);
    expect(runs.get('crash')).toBe(1);
    const diedAt = Date.now();
    // A repeat of the same invocation, read by a live core while the dead one's record lives (its lease: 1 s from the claim, before diedAt).
    const retried: string[] = [];
    const live = Object.assign(Object.create(delivery) as DeliveryStore, {
      retryLater: (address: StreamAddress, message: DeliveryMessage, dueAt: number) => {
        retried.push(message.invocationId);
        return delivery.retryLater(address, message, dueAt);
      },
    });
    await delivery.publish(jobs, { payload: '{}', invocationId: 'crash' });
    consumer('lives', live);
    while (Date.now() < diedAt + 800) {
      expect(await runtime.idempotency.getIdempotent('unit', ONCE_KEY('crash'))).toEqual({ state: 'in-flight' });
      expect(runs.get('crash')).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // The repeat was read and found the record in flight: it waited, then went back for a later attempt, without running.
    expect(retried).toContain('crash');
    await waitFor(
      async () => (await runtime.idempotency.getIdempotent('unit', ONCE_KEY('crash')))?.state === 'completed' && (await delivery.stats(jobs, Date.now())).depth === 0,
      { timeoutMs: 10_000, what: 'the message taken over and settled' },
    );
    // Once the record expired with the lease, one more run settled both deliveries.
    expect(runs.get('crash')).toBe(2);
  });

  it('a batch the store refuses leaves its messages pending and their records in flight, and the next batch goes on', async () => {
    const { runtime, delivery, runs, consumer } = await setUp();
    let refuse = true;
    const store = Object.assign(Object.create(delivery) as DeliveryStore, {
      ack: (address: StreamAddress, ids: readonly string[], answers: readonly KeptAnswer[] = []) => {
        if (refuse) return Promise.reject(new Error('store down'));
        return delivery.ack(address, ids, answers);
      },
    });
    await delivery.ensureGroup(jobs);
    await delivery.publish(jobs, { payload: '{}', invocationId: 'refused' });
    consumer('c1', store);
    await waitFor(async () => runs.get('refused') === 1, { timeoutMs: 5000, what: 'the run' });
    await new Promise((resolve) => setImmediate(resolve));
    expect((await delivery.stats(jobs, Date.now())).pending).toBe(1);
    expect(await runtime.idempotency.getIdempotent('unit', ONCE_KEY('refused'))).toEqual({ state: 'in-flight' });
    refuse = false;
    await delivery.publish(jobs, { payload: '{}', invocationId: 'next' });
    // The refused one is taken over after its lease (its record expired with it) and runs again; the next one settles at once.
    await waitFor(async () => (await delivery.stats(jobs, Date.now())).depth === 0, { timeoutMs: 10_000, what: 'both to settle' });
    expect(runs.get('next')).toBe(1);
    expect(runs.get('refused')).toBe(2);
    expect((await runtime.idempotency.getIdempotent('unit', ONCE_KEY('refused')))?.state).toBe('completed');
  });

  it('claims the records of one read in one step, for the lease or, read ahead of a slot, the lease and one run; the runs claim nothing more', async () => {
    const { runtime, delivery, runs, claims, consumer } = await setUp();
    await delivery.ensureGroup(jobs);
    for (let i = 0; i < 6; i++) await delivery.publish(jobs, { payload: '{}', invocationId: `read-${i}` });
    consumer('c1');
    await waitFor(async () => (await delivery.stats(jobs, Date.now())).depth === 0, { timeoutMs: 5000, what: 'the messages to settle' });
    // Four slots free: four claimed for the 1 s lease, two read ahead for the lease + the pool's acquire 100 ms + timeout 200 ms.
    expect(claims.many).toEqual([[1000, 1000, 1000, 1000, 1300, 1300]]);
    expect(claims.single).toEqual([]);
    expect([...runs.values()]).toEqual([1, 1, 1, 1, 1, 1]);
    for (let i = 0; i < 6; i++) expect((await runtime.idempotency.getIdempotent('unit', ONCE_KEY(`read-${i}`)))?.state).toBe('completed');
  });

  it('reads on while a read is being claimed, and starts the messages of each read in the order they were read', async () => {
    const { runtime, delivery, runs, consumer } = await setUp();
    // Each read's claim is held until the test answers it, latest first.
    const held: Array<() => void> = [];
    const slow = Object.assign(Object.create(runtime.idempotency) as IdempotencyStore, {
      beginIdempotentMany: async (appId: string, many: readonly IdempotentClaim[]) => {
        await new Promise<void>((resolve) => held.push(resolve));
        return runtime.idempotency.beginIdempotentMany(appId, many);
      },
    });
    const ttls: number[][] = [];
    const records = Object.assign(Object.create(slow) as IdempotencyStore, {
      beginIdempotentMany: (appId: string, many: readonly IdempotentClaim[]) => {
        ttls.push(many.map((claim) => claim.inFlightTtlMs));
        return slow.beginIdempotentMany(appId, many);
      },
    });
    await delivery.ensureGroup(jobs);
    for (let i = 0; i < 2; i++) await delivery.publish(jobs, { payload: '{}', invocationId: `first-${i}` });
    consumer('c1', delivery, records);
    await waitFor(() => held.length === 1, { timeoutMs: 5000, what: 'the first read to be claimed' });
    for (let i = 0; i < 3; i++) await delivery.publish(jobs, { payload: '{}', invocationId: `second-${i}` });
    // The later reads went out while the first one's claim was unanswered.
    await waitFor(() => ttls.flat().length === 5, { timeoutMs: 5000, what: 'the later reads to be claimed' });
    expect(held.length).toBeGreaterThan(1);
    expect(runs.size).toBe(0);
    // Each claim counts the messages claimed before it: four start at once, the fifth waits for a slot (the lease and one run).
    expect(ttls.flat()).toEqual([1000, 1000, 1000, 1000, 1300]);
    for (const answer of held.slice(1).reverse()) answer();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runs.size).toBe(0);
    held[0]!();
    await waitFor(() => runs.size === 5, { timeoutMs: 5000, what: 'every run' });
    expect([...runs.keys()]).toEqual(['first-0', 'first-1', 'second-0', 'second-1', 'second-2']);
  });

  it('with messages ahead of its slots, reads only once it can take half the read-ahead', async () => {
    const { delivery, gate, consumer } = await setUp();
    // Runs of different lengths: slots free one at a time.
    let started = 0;
    gate.each = () => new Promise((resolve) => setTimeout(resolve, 1 + (started++ % 4) * 3));
    const asked: number[] = [];
    const store = Object.assign(Object.create(delivery) as DeliveryStore, {
      reader(): DeliveryReader {
        const reader = delivery.reader();
        return {
          read: (address: StreamAddress, name: string, count: number, blockMs: number) => {
            asked.push(count);
            return reader.read(address, name, count, blockMs);
          },
          close: () => reader.close(),
        };
      },
    });
    await delivery.ensureGroup(jobs);
    for (let i = 0; i < 40; i++) await delivery.publish(jobs, { payload: '{}', invocationId: `many-${i}` });
    consumer('c1', store);
    await waitFor(async () => (await delivery.stats(jobs, Date.now())).depth === 0, { timeoutMs: 10_000, what: 'the messages to settle' });
    // Concurrency 4 and 4 read ahead: no read asks for fewer than 2.
    expect(asked.length).toBeGreaterThan(1);
    expect(Math.min(...asked)).toBeGreaterThanOrEqual(2);
  });

  it('gives back the claims of messages read ahead and not started when it stops; those running keep theirs', async () => {
    const { runtime, delivery, runs, gate, consumer } = await setUp();
    let open!: () => void;
    gate.held = new Promise<void>((resolve) => (open = resolve));
    await delivery.ensureGroup(jobs);
    for (let i = 0; i < 8; i++) await delivery.publish(jobs, { payload: '{}', invocationId: `stop-${i}` });
    const stopping = consumer('c1');
    await waitFor(() => runs.size === 4, { timeoutMs: 5000, what: 'four runs' });
    const states = async (): Promise<string[]> => Promise.all(Array.from({ length: 8 }, async (_, i) => (await runtime.idempotency.getIdempotent('unit', ONCE_KEY(`stop-${i}`)))?.state ?? 'none'));
    expect(await states()).toEqual(Array(8).fill('in-flight'));
    await stopping.stop(50);
    expect(await states()).toEqual([...Array(4).fill('in-flight'), ...Array(4).fill('none')]);
    open();
  });
});
