/**
 * The core never buffers more than UHLP_MAX_SANDBOX_RESPONSE_BYTES of a
 * sandbox's answer, whatever the driver: a JIT script answering ~300 MB gets the
 * client `502 UHLP_SANDBOX_RESPONSE_TOO_LARGE`, its sandbox is destroyed (not
 * reused), the core serves the next request, and the core's resident memory
 * (read from /proc of the core process, which runs as a child of the test, so
 * that nothing of the test's own memory is counted) does not grow by anything
 * near the answer, at its peak included (VmHWM).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFixture, descendants, isAlive, startUhlpDev, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';

const ANSWER_BYTES = 300 * 1024 * 1024;
const LIMIT_BYTES = 8 * 1024 * 1024;
/** Growth allowed for the core's RSS: a fraction of the answer, room for the heap's own movement. */
const ALLOWED_GROWTH_BYTES = 48 * 1024 * 1024;

/** Resident set now and at its peak, in bytes, of a process of this machine. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

export interface BoundedAnswersOptions {
  readonly driver: 'process' | 'docker';
  /** Called before the core starts (the Docker engine check). */
  readonly before?: () => Promise<void>;
  readonly startTimeoutMs?: number;
}

export function describeBoundedAnswers(options: BoundedAnswersOptions): void {
  describe(`bounded sandbox answers on the ${options.driver} driver`, () => {
    let core: UhlpProcess;

    beforeAll(async () => {
      await options.before?.();
      // The default limit (8 MiB) is what is tested, whatever the test's own environment says.
      core = await startUhlpDev(copyFixture('bounded'), ['--driver', options.driver], options.startTimeoutMs ?? 60_000, undefined, {
        UHLP_MAX_SANDBOX_RESPONSE_BYTES: '',
      });
    }, (options.startTimeoutMs ?? 60_000) + 30_000);

    afterAll(async () => {
      await core?.stop();
    });

    async function who(): Promise<{ runner: string; pid: number }> {
      const response = await fetch(`${core.url}/bounded/who`);
      expect(response.status).toBe(200);
      return (await response.json()) as { runner: string; pid: number };
    }

    it('answers 502 UHLP_SANDBOX_RESPONSE_TOO_LARGE for a 300 MB answer, destroys the sandbox, keeps serving, and stays flat', async () => {
      // The path is warm before the measurement: ingress, routing, a sandbox call, an error answer.
      const first = await who();
      for (let i = 0; i < 20; i++) await who();
      await fetch(`${core.url}/bounded/no-such-route`);
      const pid = core.child.pid!;
      const before = memoryOf(pid);
      // Runners report pids of their own PID namespace: the host's view is the core's process tree.
      const processesBefore = descendants(pid);

      const response = await fetch(`${core.url}/bounded/huge`);
      expect(response.status).toBe(502);
      const body = (await response.json()) as { code: string; details: { limitBytes: number; declaredBytes: number }; requestId: string };
      expect(body.code).toBe('UHLP_SANDBOX_RESPONSE_TOO_LARGE');
      expect(body.details.limitBytes).toBe(LIMIT_BYTES);
      expect(body.details.declaredBytes).toBeGreaterThan(ANSWER_BYTES);
      expect(body.requestId).toBe(response.headers.get('x-request-id'));

      // The sandbox that sent it is gone, and the next request runs on a new one.
      const next = await who();
      expect(next.runner).not.toBe(first.runner);
      if (options.driver === 'process') await waitFor(() => processesBefore.some((p) => !isAlive(p)), { what: 'the sandbox processes to exit' });
      const destroyed = async (): Promise<boolean> =>
        /uhlp_sandbox_destroyed_total\{app="bounded",pool="main",cause="bad-response"\} 1\b/.test(await (await fetch(`${core.url}/metrics`)).text());
      await waitFor(destroyed, { timeoutMs: 20_000, what: 'the sandbox counted as destroyed for its answer' });

      const after = memoryOf(pid);
      process.stdout.write(
        `[bounded answers, ${options.driver}] core RSS ${mib(before.rss)} -> ${mib(after.rss)} MiB, peak ${mib(before.peak)} -> ${mib(after.peak)} MiB, answer ${mib(body.details.declaredBytes)} MiB\n`,
      );
      expect(after.rss - before.rss).toBeLessThan(ALLOWED_GROWTH_BYTES);
      expect(after.peak - before.peak).toBeLessThan(ALLOWED_GROWTH_BYTES);
    });

    it('refuses it again on the replacement sandbox, and still serves', async () => {
      const first = await who();
      const response = await fetch(`${core.url}/bounded/huge`);
      expect(response.status).toBe(502);
      expect(((await response.json()) as { code: string }).code).toBe('UHLP_SANDBOX_RESPONSE_TOO_LARGE');
      expect((await who()).runner).not.toBe(first.runner);
      expect((await fetch(`${core.url}/readyz`)).status).toBe(200);
    });
  });
}

function mib(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}
