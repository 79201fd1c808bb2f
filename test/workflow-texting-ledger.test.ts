/**
 * The cancels double texting makes are ledgered as an explicit cancel is, on
 * the process driver with Redis state: an `interrupt` and a `rollback` each
 * cancel the session's active run (its model call cut), and each cancel is a
 * turn of the app's ambient session in the ledger of the core the new request
 * came to, naming the run, `by: session <id>` and `via`, its outcome the
 * run's status; the ledger verifies.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../src/ledger/ledger-entry.js';
import { canonicalJson } from '../src/shared/canonical-json.js';
import { ledgerEntries } from './helpers/ledger-entries.js';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from './helpers/openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './helpers/redis-url.js';
import { copyFixture, startUhlpDev, UHLP_BIN, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';
import { sendToWorkflow } from './helpers/workflow-requests.js';
import { dropKeys } from './sources/redis-keys.js';

describe('double-texting cancels in the ledger (process driver, Redis state)', () => {
  let llm: OpenAiTestServer;
  let core: UhlpProcess;
  let redis: Redis;
  const prefix = uniqueKeyPrefix('wf-texting-ledger');

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
    llm.handle(async (request) => (lastPrompt(request).includes('hang') ? reply.hang() : reply.text('answered')));
    const env = { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0', UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix };
    core = await startUhlpDev(copyFixture('workflow-texting'), ['--driver', 'process'], 180_000, undefined, env);
    redis = new Redis(TEST_REDIS_URL);
  }, 250_000);

  afterAll(async () => {
    redis?.disconnect();
    await core?.stop();
    await llm?.close();
    await dropKeys(prefix);
  });

  for (const mode of ['interrupt', 'rollback'] as const) {
    it(`${mode}: the cancel of the active run is ledgered with via: ${mode}, and the ledger verifies`, async () => {
      const opened = await sendToWorkflow(`${core.url}/texting/${mode}`, { text: 'hello' }, 'new');
      expect(opened.status, JSON.stringify(opened.json)).toBe(200);
      const session = opened.sessionId!;
      const before = new Set(await redis.zrange(`${prefix}runs:active`, '0', '-1'));
      const active = sendToWorkflow(`${core.url}/texting/${mode}`, { text: `hang-${mode}` }, session);
      let runId: string | undefined;
      await waitFor(
        async () => {
          runId = (await redis.zrange(`${prefix}runs:active`, '0', '-1')).find((id) => !before.has(id));
          return runId !== undefined && llm.requests.some((request) => lastPrompt(request).includes(`hang-${mode}`));
        },
        { timeoutMs: 30_000, what: "the active run's model call" },
      );
      const next = await sendToWorkflow(`${core.url}/texting/${mode}`, { text: 'next' }, session);
      expect(next.status, JSON.stringify(next.json)).toBe(200);
      expect((await active).json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED', details: { via: mode } });

      // The ledger keeps the hash of each entry's query: the cancel's is known from what it names.
      const query = sha256(canonicalJson({ source: 'internal', cancel: { runId, app: 'texting', by: `session ${session}`, via: mode } }));
      const cancels = (): Array<Record<string, unknown>> => ledgerEntries(core.dataDir).filter((entry) => entry['entry_type'] === 'L-EXEC' && entry['query_hash'] === query);
      await waitFor(() => cancels().length === 1, { timeoutMs: 10_000, what: `the ${mode} cancel in the ledger` });
      expect(cancels()[0]!['status']).toBe('cancelled');
      const verified = await promisify(execFile)(process.execPath, [UHLP_BIN, 'ledger', 'verify', '--data-dir', core.dataDir]);
      expect(verified.stdout + verified.stderr).not.toMatch(/does not verify/);
    }, 120_000);
  }
});
