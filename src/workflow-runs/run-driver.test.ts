import { afterEach, describe, expect, it } from 'vitest';
import type { LoadedApp } from '../apps/app-snapshot.js';
import { loadedRunOf, MAX_LOADED_RUN_BYTES } from '../contract/workflow/loaded-run.js';
import type { ExecutionGrant } from '../mcp/mcp-token-service.js';
import { silentLogger } from '../logger.js';
import { UhlpError } from '../shared/errors.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import type { TurnEvent, WorkflowRunTurn } from '../turns/turn-event.js';
import type { InterceptorChain } from './interceptors.js';
import type { PipelineTurns } from './pipeline-turns.js';
import { RunDriver } from './run-driver.js';
import { RunService } from './run-service.js';
import { newRunFixture } from '../../test/helpers/new-run.js';
import type { WorkflowCatalog } from './workflow-catalog.js';
import { WorkflowToolBacking } from './workflow-tool-backing.js';

const APP = {
  id: 'app',
  revision: 'r1',
  components: new Map([
    ['flow', { id: 'flow', handler: 'WORKFLOW' }],
    ['ticket', { id: 'ticket', handler: 'JIT' }],
    ['writer', { id: 'writer', handler: 'LLM', llm: { prompt: 'prompts/w.njk' } }],
  ]),
} as unknown as LoadedApp;

const NO_INTERCEPTORS = { intercepts: false } as InterceptorChain;

const newRun = newRunFixture;

/** A driver and the tool backing over one memory store; the catalog knows APP. */
function core(): { runs: RunService; tools: WorkflowToolBacking; driver: RunDriver; store: MemoryRuntimeStore } {
  const store = new MemoryRuntimeStore();
  const runs = new RunService({ store: store.runs, ttlMs: 60_000, maxBytes: 1024 * 1024 });
  const catalog = { app: () => APP } as unknown as WorkflowCatalog;
  const tools = new WorkflowToolBacking({ runs, catalog, pipeline: {} as PipelineTurns });
  const driver = new RunDriver({ runs, leases: store.leases, logger: silentLogger(), instanceId: 'core-1', preload: (claimed) => tools.preload(claimed) });
  return { runs, tools, driver, store };
}

/** The grant of the execution `requestId` that drives `runId`. */
const grantOf = (runId: string, requestId: string): ExecutionGrant => ({ appId: 'app', requestId, run: { id: runId, owner: true } }) as unknown as ExecutionGrant;

describe('the load answer a run carries to its execution', () => {
  const stores: MemoryRuntimeStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });

  it("is the run's first execution's: what core.workflow.load answers it, as JSON the orchestrator takes; a resumed execution carries none", async () => {
    const { runs, tools, driver, store } = core();
    stores.push(store);
    await runs.create(newRun('RUN-1'));
    const carried: Array<{ requestId: string; run: WorkflowRunTurn }> = [];
    const loadedThen: unknown[] = [];
    const final = await driver.drive(
      'RUN-1',
      { requestId: 'req-1' } as TurnEvent,
      {},
      async (event) => {
        carried.push({ requestId: event.requestId, run: event.workflowRun! });
        loadedThen.push(await tools.load(grantOf('RUN-1', event.requestId)));
        // The first sandbox dies; the run goes on in a second execution, which ends it.
        if (carried.length === 1) throw new UhlpError('UHLP_SANDBOX_DIED', 'gone');
        await runs.checkpoint('RUN-1', event.requestId, { steps: [], status: 'completed', result: { ok: true } });
        return { status: 200, headers: {}, body: '' };
      },
      NO_INTERCEPTORS,
    );
    expect(final.status).toBe(200);
    expect(carried).toHaveLength(2);
    const [first, second] = carried;
    const sent = JSON.parse(first!.run.loaded!) as Record<string, unknown>;
    // The same answer as the tool's, but for the time left, which went on between the two.
    const asked = loadedThen[0] as { run: { remainingMs: number } };
    expect({ ...sent, run: { ...(sent['run'] as object), remainingMs: asked.run.remainingMs } }).toEqual(JSON.parse(JSON.stringify(asked)));
    expect(sent).toMatchObject({ run: { id: 'RUN-1', status: 'running', fresh: true, nextStep: 0 }, workflowFile: 'workflows/flow.yaml' });
    expect(sent['components']).toEqual({ flow: { handler: 'WORKFLOW' }, ticket: { handler: 'JIT' }, writer: { handler: 'LLM', llm: { prompt: 'prompts/w.njk' } } });
    expect(loadedRunOf(sent, { runId: 'RUN-1', workflowId: 'flow', revision: 'r1' })).toBeDefined();
    expect(second!.requestId).not.toBe(first!.requestId);
    expect(second!.run.loaded).toBeUndefined();
  });

  it('is not carried by a run resumed after an approval: that execution loads the stored record', async () => {
    const { runs, driver, store } = core();
    stores.push(store);
    await runs.create(newRun('RUN-2'));
    const carried: Array<string | undefined> = [];
    await driver.drive('RUN-2', { requestId: 'req-1' } as TurnEvent, {}, async (event) => {
      carried.push(event.workflowRun!.loaded);
      await runs.checkpoint('RUN-2', event.requestId, { steps: [], status: 'paused', paused: { node: 'gate', prompt: 'ok?' } });
      return { status: 200, headers: {}, body: '' };
    }, NO_INTERCEPTORS);
    await runs.resume('RUN-2', { approved: true }, []);
    await driver.drive('RUN-2', { requestId: 'req-2' } as TurnEvent, {}, async (event) => {
      carried.push(event.workflowRun!.loaded);
      await runs.checkpoint('RUN-2', event.requestId, { steps: [], status: 'completed', result: null });
      return { status: 200, headers: {}, body: '' };
    }, NO_INTERCEPTORS);
    expect(carried[0]).toBeDefined();
    expect(carried[1]).toBeUndefined();
  });

  it('is left out over MAX_LOADED_RUN_BYTES, whatever the characters (the execution loads the run), and within it is carried', async () => {
    const { runs, tools, store } = core();
    stores.push(store);
    const cases: Array<[string, string, boolean]> = [
      ['small', 'x'.repeat(100), true],
      ['ASCII over the bound', 'x'.repeat(MAX_LOADED_RUN_BYTES), false],
      // Fewer characters than the bound, more bytes than it: three bytes each in UTF-8.
      ['multi-byte over the bound in bytes only', '€'.repeat(Math.ceil(MAX_LOADED_RUN_BYTES / 2.5)), false],
    ];
    for (const [name, text, within] of cases) {
      const id = `RUN-${name.replace(/\W/g, '')}`;
      await runs.create(newRun(id, { input: { text } }));
      const claimed = await runs.claim(id, 'req-1');
      const json = tools.preload(claimed);
      expect(json !== undefined, name).toBe(within);
      if (json !== undefined) expect(Buffer.byteLength(json)).toBeLessThanOrEqual(MAX_LOADED_RUN_BYTES);
    }
  });

  it('is left out when the app at the run\'s revision cannot be had here (the load through MCP then says why)', async () => {
    const store = new MemoryRuntimeStore();
    stores.push(store);
    const runs = new RunService({ store: store.runs, ttlMs: 60_000, maxBytes: 1024 * 1024 });
    const catalog = {
      app: () => {
        throw new UhlpError('UHLP_WORKFLOW_INVALID', 'gone');
      },
    } as unknown as WorkflowCatalog;
    const tools = new WorkflowToolBacking({ runs, catalog, pipeline: {} as PipelineTurns });
    await runs.create(newRun('RUN-3'));
    expect(tools.preload(await runs.claim('RUN-3', 'req-1'))).toBeUndefined();
    await expect(tools.load(grantOf('RUN-3', 'req-1'))).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_INVALID' });
  });
});

describe('a run whose execution the runtime store refused', () => {
  const stores: MemoryRuntimeStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });

  it('goes on from its last checkpoint, more times than a sandbox death is resumed, whether the refusal was thrown or answered', async () => {
    const { runs, driver, store } = core();
    stores.push(store);
    await runs.create(newRun('RUN-S'));
    const executions: string[] = [];
    const final = await driver.drive('RUN-S', { requestId: 'req-1' } as TurnEvent, {}, async (event) => {
      executions.push(event.requestId);
      // The first two are refused at the core, the next two by the orchestrator's step (its error result): four, past MAX_RESUMES.
      if (executions.length <= 2) throw new UhlpError('UHLP_STATE_UNAVAILABLE', 'failing over');
      if (executions.length <= 4) return { status: 503, headers: {}, body: '', failure: { code: 'UHLP_STATE_UNAVAILABLE', message: 'failing over' } };
      await runs.checkpoint('RUN-S', event.requestId, { steps: [], status: 'completed', result: { ok: true } });
      return { status: 200, headers: {}, body: '' };
    }, NO_INTERCEPTORS);
    expect(final.status).toBe(200);
    expect(executions).toHaveLength(5);
    expect(new Set(executions).size).toBe(5);
    expect((await runs.get('RUN-S')).status).toBe('completed');
  }, 15_000);

  it('fails as before on any other answer that leaves it running', async () => {
    const { runs, driver, store } = core();
    stores.push(store);
    await runs.create(newRun('RUN-T'));
    await expect(
      driver.drive('RUN-T', { requestId: 'req-1' } as TurnEvent, {}, async () => ({ status: 500, headers: {}, body: '', failure: { code: 'UHLP_INTERNAL', message: 'no' } }), NO_INTERCEPTORS),
    ).rejects.toMatchObject({ code: 'UHLP_SANDBOX_BAD_RESPONSE' });
    expect((await runs.get('RUN-T')).status).toBe('failed');
  });
});
