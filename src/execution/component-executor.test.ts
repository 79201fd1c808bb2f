import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../metrics.js';
import type { Lease, PooledSandbox, PoolStrategy } from '../sandbox/pool-strategy.js';
import type { SandboxClient } from '../sandbox/sandbox-client.js';
import { ComponentExecutor } from './component-executor.js';

/** One sandbox whose runner answers `answer` at once, in a pool that leases it and records the releases. */
function onePool(answer: Record<string, unknown>) {
  const released: string[] = [];
  const client = { execute: async () => ({ status: 200, body: Buffer.from(JSON.stringify(answer)) }) } as unknown as SandboxClient;
  const sandbox = { handle: { id: 'sb-1', endpoint: { kind: 'unix', socketPath: '/nonexistent' } }, client, uses: 0, active: 0 } as unknown as PooledSandbox;
  const pool: PoolStrategy = {
    tryAcquire: () => ({ sandbox, hit: true }) as Lease,
    acquire: async () => ({ sandbox, hit: true }) as Lease,
    prepareRequest: (_lease, body) => body,
    release: (lease, outcome) => {
      lease.sandbox.uses += 1;
      released.push(outcome);
    },
  };
  return { pool, released };
}

describe('ComponentExecutor', () => {
  it('logs where an execution\'s time went (debug) only once its answer is on its way, for the use it was', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const { pool, released } = onePool({ requestId: 'r-1', resultType: 'generic', data: { ok: true }, metrics: { execution_time_ms: 1.5, script_load_ms: 1.25 } });
    const executor = new ComponentExecutor({ pool: () => pool }, createMetrics({ defaultMetrics: false }), logger);

    const outcome = await executor.execute({ appId: 'shop', poolName: 'p', timeoutMs: 1000 }, 'r-1', '{"requestId":"r-1"}');
    expect(outcome.response.data).toEqual({ ok: true });
    expect(released).toEqual(['ok']);
    // The answer came back with no log line written in its time.
    expect(lines.filter((line) => line.msg === 'execution timing')).toEqual([]);

    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.filter((line) => line.msg === 'execution timing')).toEqual([
      expect.objectContaining({ app: 'shop', pool: 'p', sandbox: 'sb-1', requestId: 'r-1', use: 1, runnerMs: 1.5, scriptLoadMs: 1.25, acquireMs: expect.any(Number), roundTripMs: expect.any(Number) }),
    ]);
  });

  it('writes no timing line at all above debug level', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const { pool } = onePool({ requestId: 'r-2', resultType: 'generic', data: {} });
    const executor = new ComponentExecutor({ pool: () => pool }, createMetrics({ defaultMetrics: false }), logger);
    await executor.execute({ appId: 'shop', poolName: 'p', timeoutMs: 1000 }, 'r-2', '{"requestId":"r-2"}');
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual([]);
  });
});
