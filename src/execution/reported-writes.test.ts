/**
 * The core's side of a pod's write surface: it asks the runner for a report
 * when it cannot walk the tree, compares the report with the declarations as it
 * compares its own walk, and does not reuse a sandbox that wrote what it did
 * not declare or did not report. The runner here is the real runner server on a
 * Unix socket, reached by the core's own sandbox client.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ExecuteResponse } from '../contract/execute-contract.js';
import { newTurnEvidence } from '../ledger/turn-evidence.js';
import { createMetrics } from '../metrics.js';
import type { Executor } from '../runners/kit/executor.js';
import { createRunnerServer, type RunnerServer } from '../runners/kit/runner-server.js';
import type { Lease, PooledSandbox, PoolStrategy } from '../sandbox/pool-strategy.js';
import { SandboxClient } from '../sandbox/sandbox-client.js';
import { UhlpError } from '../shared/errors.js';
import { ComponentExecutor, type TurnWrites } from './component-executor.js';
import { askForWrites, checkReportedWrites } from './reported-writes.js';

const SID = 's-7f3a9c0d1e2b4a5f';

describe('checkReportedWrites', () => {
  const file = (p: string) => ({ path: p, size: 1, kind: 'file' as const, hash: `sha256:${'0'.repeat(64)}` });
  const answer = (writes?: ExecuteResponse['writes']): ExecuteResponse => ({ requestId: 'r', resultType: 'generic', data: null, ...(writes ? { writes } : {}) });
  const declared = [{ path: 'output/report.json', role: 'report' }, { path: 'tmp/**', role: 'scratch' }];

  it.each([
    { name: 'nothing written, nothing declared', writes: { realized: [], emptied: true }, declared: [], undeclared: [], missing: [], recycle: false },
    { name: 'what was declared', writes: { realized: [file('output/report.json'), file('tmp/a/b')], emptied: true }, declared, undeclared: [], missing: [], recycle: false },
    { name: 'a declared file not written: refused, and the pod is clean', writes: { realized: [], emptied: true }, declared, undeclared: [], missing: ['output/report.json'], recycle: false },
    { name: 'a file beside tmp/ and output/', writes: { realized: [file('planted')], emptied: true }, declared, undeclared: ['planted'], missing: ['output/report.json'], recycle: true },
    { name: 'a link where a declared file should be', writes: { realized: [{ path: 'output/report.json', size: 0, kind: 'symlink' as const }], emptied: true }, declared, undeclared: ['output/report.json (symlink)'], missing: [], recycle: true },
    { name: 'a stray in the socket directory', writes: { realized: [file('/run/uhlp/x')], emptied: true }, declared, undeclared: ['/run/uhlp/x'], missing: ['output/report.json'], recycle: true },
    { name: 'a tree the runner could not empty', writes: { realized: [file('output/report.json')], emptied: false }, declared: declared.slice(0, 1), undeclared: [], missing: [], recycle: true },
  ])('$name', ({ writes, declared: asked, undeclared, missing, recycle }) => {
    const result = checkReportedWrites(answer(writes), asked);
    expect(result.check.undeclared).toEqual(undeclared);
    expect(result.check.missing).toEqual(missing);
    expect(result.recycle).toBe(recycle);
  });

  it('refuses an answer without a report (a runner older than the core) with its own code', () => {
    expect(() => checkReportedWrites(answer(), [])).toThrow(expect.objectContaining({ code: 'UHLP_WRITE_SURFACE_UNREPORTED', statusCode: 502 }));
  });

  it('asks by adding one member to the request object', () => {
    expect(JSON.parse(askForWrites('{"requestId":"r","context":{"x":1}}'))).toEqual({ requestId: 'r', context: { x: 1 }, reportWrites: true });
  });
});

describe('ComponentExecutor on a sandbox whose tree it cannot walk', () => {
  const runners: RunnerServer[] = [];
  afterEach(async () => {
    // drain: the core's client keeps its connection alive, and an idle one is ended.
    for (const runner of runners.splice(0)) await runner.drain();
  });

  /** A real runner on a Unix socket whose execution does `writes` in its tree; `reports` false: an old image's runner, which has no walk. */
  async function podLike(writes: (work: string) => void, reports = true) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-rw-core-'));
    const work = path.join(dir, 'work');
    for (const top of ['tmp', 'output']) mkdirSync(path.join(work, top), { recursive: true });
    const executor: Executor = async () => {
      writes(work);
      return { resultType: 'generic', data: { ok: true } };
    };
    const runner = createRunnerServer({ executor, ...(reports ? { workTree: { hostDir: work } } : {}) });
    runners.push(runner);
    const socketPath = path.join(dir, 'r.sock');
    await new Promise<void>((resolve) => runner.server.listen(socketPath, resolve));
    const client = new SandboxClient({ kind: 'unix', socketPath });
    // As the pod driver's handles: no workTree, the core has no view of the pod's /work.
    const sandbox = { handle: { id: 'pod-1', endpoint: { kind: 'unix', socketPath } }, client, uses: 0, active: 0 } as unknown as PooledSandbox;
    const released: string[] = [];
    const pool: PoolStrategy = {
      tryAcquire: () => ({ sandbox, hit: true }) as Lease,
      acquire: async () => ({ sandbox, hit: true }) as Lease,
      prepareRequest: (_lease, body) => body,
      release: (_lease, outcome) => void released.push(outcome),
    };
    const executor2 = new ComponentExecutor({ pool: () => pool }, createMetrics({ defaultMetrics: false }), pino({ level: 'silent' }));
    return { work, released, executor: executor2 };
  }

  function body(requestId: string): string {
    return JSON.stringify({
      requestId,
      requestData: { source: 'internal' },
      context: {
        appId: 'a',
        componentId: 'c',
        mcp_endpoint: 'http://127.0.0.1:1/mcp',
        stateConfig: { type: 'none' },
        sessionId: SID,
        workspace: { tmpDir: `tmp/${SID}`, outputDir: `output/${SID}` },
        configuration: {},
        applicationInfo: { deploymentMode: 'development' },
      },
    });
  }

  function turn(declared: TurnWrites['declared']): TurnWrites {
    return { sessionId: SID, declared, outputsRoot: undefined, evidence: newTurnEvidence() };
  }

  it('passes a turn that wrote what it declared, keeps the pod, and records the writes', async () => {
    const pod = await podLike((work) => writeFileSync(path.join(work, 'output', SID, 'report.json'), '{"ok":true}'));
    const writes = turn([{ path: 'output/report.json', role: 'report' }]);
    const outcome = await pod.executor.execute({ appId: 'a', poolName: 'p', timeoutMs: 5000 }, 'r-1', body('r-1'), undefined, writes);
    expect(outcome.response.data).toEqual({ ok: true });
    expect(pod.released).toEqual(['ok']);
    expect(writes.evidence.realizedWrites).toEqual([expect.objectContaining({ path: 'output/report.json', size: 11, kind: 'file' })]);
  });

  it('refuses an undeclared write with UHLP_WRITE_SURFACE_MISMATCH and deletes the pod', async () => {
    const pod = await podLike((work) => writeFileSync(path.join(work, 'planted.sh'), 'for the next session'));
    const writes = turn([]);
    const failure = await pod.executor.execute({ appId: 'a', poolName: 'p', timeoutMs: 5000 }, 'r-2', body('r-2'), undefined, writes).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UhlpError);
    expect(failure).toMatchObject({ code: 'UHLP_WRITE_SURFACE_MISMATCH', details: { undeclared: ['planted.sh'] } });
    expect(pod.released).toEqual(['recycled']);
    expect(writes.evidence.capabilityViolations).toEqual([expect.objectContaining({ operation: 'write planted.sh', detail: 'written but not declared' })]);
  });

  it('fails the turn of a runner that does not report (an old image) with UHLP_WRITE_SURFACE_UNREPORTED, and deletes the pod', async () => {
    const pod = await podLike(() => undefined, false);
    const failure = await pod.executor.execute({ appId: 'a', poolName: 'p', timeoutMs: 5000 }, 'r-3', body('r-3'), undefined, turn([])).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'UHLP_WRITE_SURFACE_UNREPORTED' });
    expect(pod.released).toEqual(['recycled']);
  });

  it('asks for no report and checks nothing on an execution that is not a turn', async () => {
    const pod = await podLike((work) => writeFileSync(path.join(work, 'x'), 'x'), false);
    await pod.executor.execute({ appId: 'a', poolName: 'p', timeoutMs: 5000 }, 'r-4', body('r-4'));
    expect(pod.released).toEqual(['ok']);
  });
});
