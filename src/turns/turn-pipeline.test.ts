import { afterEach, describe, expect, it } from 'vitest';
import { AppSnapshot, type LoadedApp } from '../apps/app-snapshot.js';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import { validateAppDefinition } from '../apps/validation/validate-app-definition.js';
import { ComponentExecutor } from '../execution/component-executor.js';
import { ExecuteContextWriter } from '../execution/execute-context.js';
import type { ExecutionDecorator, ExecutionResult, ExecutionStage } from '../execution/execution-stage.js';
import { CsBundleTurns } from '../functions/cs-bundle-turns.js';
import { silentLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import { isUhlpError } from '../shared/errors.js';
import { createRuntimeStore } from '../state/create-runtime-store.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import { WORKFLOWS_NOT_RUN } from '../workflow-runs/workflow-run-turns.js';
import { ComponentTurns } from './component-turns.js';
import type { TurnEvent } from './turn-event.js';
import { REPLAYED_HEADER } from './idempotency.js';
import { TurnKeeper } from './turn-keeper.js';
import { TurnPipeline } from './turn-pipeline.js';
import { TurnJournal } from './turn-journal.js';
import type { TurnDecorator, TurnRunner } from './turn-runner.js';

function loadedApp(spec: { limits?: Record<string, unknown>; pools?: Array<Record<string, unknown>>; components: Array<Record<string, unknown>> }): LoadedApp {
  const result = validateAppDefinition(
    {
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name: 'unit' },
      spec: {
        ingress: {},
        ...(spec.limits !== undefined ? { limits: spec.limits } : {}),
        pools: spec.pools ?? [{ name: 'p' }],
        components: spec.components,
        routes: [{ http: { method: 'GET', path: '/x' }, component: String(spec.components[0]!['id']) }],
      },
    },
    { file: 'apps/unit/app.yaml', appDirName: 'unit', fileExists: () => true },
  );
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return new AppSnapshot('0123456789abcdef', [{ file: 'apps/unit/app.yaml', document: result.document }], []).apps.get('unit')!;
}

function eventOf(app: LoadedApp, componentId: string, extra: Partial<TurnEvent> = {}): TurnEvent {
  const component = app.components.get(componentId)!;
  return { app, component, pool: app.pools.get(component.pool)!, requestId: `r-${Math.random()}`, requestDataJson: '{"source":"internal"}', session: undefined, declaredOutputs: [], ...extra };
}

/** A stage that answers at once, recording what reached it: the sandbox the units here do without. */
function answering(log: string[]): ExecutionDecorator {
  return {
    decorate(_app, component) {
      log.push(`compose execution ${component.id}`);
      return {
        async execute(call): Promise<ExecutionResult> {
          log.push(`execute ${call.event.component.id}${call.event.cs !== undefined ? ` cs v${call.event.cs.version}` : ''}`);
          return { response: { requestId: call.event.requestId, resultType: 'generic', data: { turn: call.turn.turnNumber } }, text: '{}' };
        },
      };
    },
  };
}

/** A turn decorator that names itself around each turn of the components it takes. */
function around(name: string, log: string[], takes: (component: ComponentSpec) => boolean = () => true): TurnDecorator {
  return {
    decorate(_app, component, inner): TurnRunner {
      log.push(`compose ${name} ${component.id}`);
      if (!takes(component)) return inner;
      return {
        async run(event, notes) {
          log.push(`${name} before`);
          const answer = await inner.run(event, notes);
          log.push(`${name} after`);
          return answer;
        },
      };
    },
  };
}

describe('the turn pipeline and its per-component seam', () => {
  const stores: RuntimeStore[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });

  async function pipelineOf(options: { turnDecorators?: TurnDecorator[]; executionDecorators?: ExecutionDecorator[]; journal?: TurnJournal }): Promise<{ pipeline: TurnPipeline; components: ComponentTurns; store: RuntimeStore }> {
    const { journal, ...decorators } = options;
    const store = await createRuntimeStore();
    stores.push(store);
    const metrics = createMetrics({ defaultMetrics: false });
    const sandboxes = { pool: () => undefined } as unknown as SandboxManager;
    const components = new ComponentTurns({
      stages: { turns: new TurnKeeper({ store: store.sessions, sessionTtlMs: 60_000 }), metrics },
      sandbox: { executor: new ComponentExecutor(sandboxes, metrics, silentLogger()), contexts: new ExecuteContextWriter(), mcpEndpoint: () => 'http://127.0.0.1:1/mcp' },
      ...decorators,
    });
    return { pipeline: new TurnPipeline({ components, metrics, store, idempotencyTtlMs: 60_000, ...(journal !== undefined ? { journal } : {}) }), components, store };
  }

  it('composes each component once, when its app loads, and never per request', async () => {
    const log: string[] = [];
    const app = loadedApp({ components: [{ id: 'a', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }, { id: 'b', handler: 'JIT', pool: 'p', jit: { script: 'b.js' } }] });
    const { pipeline, components } = await pipelineOf({ turnDecorators: [around('outer', log)], executionDecorators: [answering(log)] });
    components.load(new AppSnapshot('0123456789abcdef', [], []));
    expect(log).toEqual([]);
    components.load({ apps: new Map([['unit', app]]) });
    expect(log).toEqual(['compose execution a', 'compose outer a', 'compose execution b', 'compose outer b']);
    log.length = 0;
    for (let i = 0; i < 3; i++) await pipeline.run(eventOf(app, 'a'), {});
    expect(log).toEqual(Array(3).fill(['outer before', 'execute a', 'outer after']).flat());
  });

  it('composes an app it meets first at a turn (a pinned revision) at that turn, once', async () => {
    const log: string[] = [];
    const app = loadedApp({ components: [{ id: 'a', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }] });
    const { pipeline } = await pipelineOf({ executionDecorators: [answering(log)] });
    await pipeline.run(eventOf(app, 'a'), {});
    await pipeline.run(eventOf(app, 'a'), {});
    expect(log).toEqual(['compose execution a', 'execute a', 'execute a']);
  });

  it('runs limit, then once-only, then the component turn: a refused or replayed event never reaches the turn', async () => {
    const log: string[] = [];
    const app = loadedApp({ limits: { requestsPerSecond: 1 }, components: [{ id: 'a', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }] });
    const { pipeline } = await pipelineOf({ turnDecorators: [around('turn', log)], executionDecorators: [answering(log)] });
    const once = { key: 'k1', fingerprint: 'f1' };
    const first = await pipeline.run(eventOf(app, 'a', { once }), {});
    expect(first.status).toBe(200);
    log.length = 0;
    const notes: Record<string, string> = {};
    const refused = await pipeline.run(eventOf(app, 'a', { once }), notes).catch((error: unknown) => error);
    expect(isUhlpError(refused) && refused.code).toBe('UHLP_RATE_LIMITED');
    expect(notes['retry-after']).toBe('1');
    expect(log).toEqual([]);
  });

  it('journals every turn it runs: answered, refused, replayed, with its source, route and the time of each stage', async () => {
    const log: string[] = [];
    const journal = new TurnJournal({ size: 10, core: 'core-1' });
    const app = loadedApp({ limits: { requestsPerSecond: 1 }, components: [{ id: 'a', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }] });
    const { pipeline } = await pipelineOf({ executionDecorators: [answering(log)], journal });
    const first = eventOf(app, 'a', { source: 'queue', route: 'jobs', once: { key: 'k1', fingerprint: 'f1' } });
    await pipeline.run(first, {});
    const refused = eventOf(app, 'a', { source: 'http', route: 'GET /x' });
    await pipeline.run(refused, {}).catch(() => undefined);
    const answered = await journal.get(first.requestId);
    expect(answered).toMatchObject({ app: 'unit', component: 'a', source: 'queue', route: 'jobs', status: 200, core: 'core-1' });
    expect(answered!.code).toBeUndefined();
    for (const stage of ['limitMs', 'claimMs', 'sessionMs', 'executionMs'] as const) expect(answered!.timing[stage]).toBeGreaterThan(0);
    expect(answered!.durationMs).toBeGreaterThanOrEqual(answered!.timing.executionMs);
    expect(await journal.get(refused.requestId)).toMatchObject({ source: 'http', status: 429, code: 'UHLP_RATE_LIMITED' });
    expect((await journal.list({}, 10)).turns.map((turn) => turn.id)).toEqual([refused.requestId, first.requestId]);
  });

  it('replays a once-only answer without a second turn', async () => {
    const log: string[] = [];
    const app = loadedApp({ components: [{ id: 'a', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }] });
    const { pipeline } = await pipelineOf({ executionDecorators: [answering(log)] });
    const once = { key: 'k2', fingerprint: 'f2' };
    const first = await pipeline.run(eventOf(app, 'a', { once }), {});
    const notes: Record<string, string> = {};
    const again = await pipeline.run(eventOf(app, 'a', { once }), notes);
    expect(String(again.body)).toBe(String(first.body));
    expect(notes[REPLAYED_HEADER]).toBe('true');
    expect(log.filter((line) => line.startsWith('execute'))).toEqual(['execute a']);
  });

  it('gives the session stage before the execution and names a stored session to the client', async () => {
    const log: string[] = [];
    const app = loadedApp({ components: [{ id: 'a', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }] });
    const { pipeline } = await pipelineOf({ executionDecorators: [answering(log)] });
    const notes: Record<string, string> = {};
    const answer = await pipeline.run(eventOf(app, 'a', { session: { open: true } }), notes);
    expect(JSON.parse(String(answer.body))).toEqual({ turn: 1 });
    expect(notes['x-uhlp-session-id']).toMatch(/^SES-/);
    expect(notes['x-uhlp-turn']).toBe('1');
    const next = await pipeline.run(eventOf(app, 'a', { session: { continue: notes['x-uhlp-session-id']! } }), {});
    expect(JSON.parse(String(next.body))).toEqual({ turn: 2 });
  });

  it('resolves a cs component\'s bundle before its turn, and refuses a ref that names nothing with no session begun', async () => {
    const log: string[] = [];
    const app = loadedApp({
      pools: [{ name: 'p' }, { name: 'cs', runner: 'csjs' }],
      components: [{ id: 'fn', handler: 'JIT', pool: 'cs', cs: { function: 'pay/echo', ref: 'prod' } }, { id: 'plain', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }],
    });
    const store = await createRuntimeStore();
    stores.push(store);
    const { pipeline } = await pipelineOf({ turnDecorators: [around('turn', log), new CsBundleTurns(store.functions)], executionDecorators: [answering(log)] });
    log.length = 0;
    const refused = await pipeline.run(eventOf(app, 'fn', { session: { open: true } }), {}).catch((error: unknown) => error);
    expect(isUhlpError(refused) && refused.code).toBe('UHLP_FN_NOT_FOUND');
    expect(log).toEqual(['compose execution fn', 'compose turn fn', 'compose execution plain', 'compose turn plain', 'turn before']);
    const sha256 = 'a'.repeat(64);
    await store.functions.putBundle('unit', sha256, new Uint8Array([1]));
    const published = await store.functions.publishVersion('unit', 'pay', 'echo', sha256);
    await store.functions.setAlias('unit', 'pay', 'echo', 'prod', published.version);
    log.length = 0;
    await pipeline.run(eventOf(app, 'fn'), {});
    await pipeline.run(eventOf(app, 'plain'), {});
    expect(log).toEqual(['turn before', `execute fn cs v${published.version}`, 'turn after', 'turn before', 'execute plain', 'turn after']);
  });

  it('refuses a WORKFLOW component with 501 before its turn on a core that runs no workflows, and lets a run\'s own turn through', async () => {
    const app = loadedApp({ components: [{ id: 'a', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }] });
    const flow = { id: 'flow', handler: 'WORKFLOW', pool: 'p', workflow: { workflowId: 'flow' } } as ComponentSpec;
    const reached: string[] = [];
    const inner: TurnRunner = {
      async run(event) {
        reached.push(event.requestId);
        return { status: 200, headers: {}, body: '' };
      },
    };
    expect(WORKFLOWS_NOT_RUN.decorate(app, app.components.get('a')!, inner)).toBe(inner);
    const refusing = WORKFLOWS_NOT_RUN.decorate(app, flow, inner);
    const event = { ...eventOf(app, 'a'), component: flow, requestId: 'client' };
    const refused = await refusing.run(event, {}).catch((error: unknown) => error);
    expect(isUhlpError(refused) && [refused.code, refused.statusCode]).toEqual(['UHLP_HANDLER_NOT_SUPPORTED', 501]);
    await refusing.run({ ...event, requestId: 'run', workflowRun: { runId: 'RUN-1', owner: true } }, {});
    expect(reached).toEqual(['run']);
  });
});

describe('an execution decorator sees the turn the session stage began', () => {
  it('is given the turn, its evidence and the event, and may run what it wraps more than once', async () => {
    const calls: number[] = [];
    const twice: ExecutionDecorator = {
      decorate(_app, _component, inner: ExecutionStage): ExecutionStage {
        return {
          async execute(call) {
            calls.push(call.turn.turnNumber);
            await inner.execute({ ...call, view: { component: call.event.component, pool: call.event.pool, background: true } });
            return inner.execute(call);
          },
        };
      },
    };
    const seen: Array<{ background: boolean; sameEvidence: boolean }> = [];
    let turnEvidence: unknown;
    const recording: ExecutionDecorator = {
      decorate(): ExecutionStage {
        return {
          async execute(call) {
            turnEvidence ??= call.evidence;
            seen.push({ background: call.view?.background === true, sameEvidence: call.evidence === turnEvidence });
            return { response: { requestId: call.event.requestId, resultType: 'generic', data: null }, text: 'null' };
          },
        };
      },
    };
    const store = await createRuntimeStore();
    const metrics = createMetrics({ defaultMetrics: false });
    const app = loadedApp({ components: [{ id: 'a', handler: 'JIT', pool: 'p', jit: { script: 'a.js' } }] });
    const components = new ComponentTurns({
      stages: { turns: new TurnKeeper({ store: store.sessions, sessionTtlMs: 60_000 }), metrics },
      sandbox: { executor: undefined as unknown as ComponentExecutor, contexts: new ExecuteContextWriter(), mcpEndpoint: () => '' },
      executionDecorators: [twice, recording],
    });
    const pipeline = new TurnPipeline({ components, metrics, store, idempotencyTtlMs: 1000 });
    await pipeline.run(eventOf(app, 'a'), {});
    await store.close();
    expect(calls).toEqual([1]);
    expect(seen).toEqual([
      { background: true, sameEvidence: true },
      { background: false, sameEvidence: true },
    ]);
  });
});
