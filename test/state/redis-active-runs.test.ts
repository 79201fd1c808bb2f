/**
 * The list of active runs is where a core looks for runs nobody drives
 * (orphan-sweeper.ts): a running run whose id leaves it is never resumed when
 * its core dies. Listing also takes out the ids whose record expired; that must
 * never take out a run whose record is there because the check of it failed —
 * as a read of a failing-over or overloaded master does (a timeout, a closed
 * connection, a refusal). Here a real Redis refuses the check (a user whose
 * ACL forbids EXISTS): the run stays listed, and a core that may check resumes it.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { RuntimeKeys } from '../../src/state/runtime-keys.js';
import { RedisServerProcess } from '../helpers/redis-server-process.js';
import { uniqueKeyPrefix } from '../helpers/redis-url.js';

describe('the active runs of a Redis runtime store', () => {
  let server: RedisServerProcess;
  let admin: Redis;

  beforeAll(async () => {
    server = await RedisServerProcess.create();
    await server.start();
    admin = new Redis(server.port, '127.0.0.1');
    // Everything but EXISTS (also inside scripts, where Redis checks a user's ACL too).
    await admin.acl('SETUSER', 'no-exists', 'on', '>secret', '~*', '&*', '+@all', '-exists');
  }, 30_000);

  afterAll(async () => {
    admin?.disconnect();
    await server?.destroy();
  });

  it('keeps a running run listed when the check of its record fails, and drops it only once its record is gone', async () => {
    const prefix = uniqueKeyPrefix('active-runs');
    const keys = new RuntimeKeys(prefix);
    const store = await RedisRuntimeStore.connect({ url: server.url, keyPrefix: prefix, timeoutMs: 5000 });
    const refused = await RedisRuntimeStore.connect({ url: `redis://no-exists:secret@127.0.0.1:${server.port}`, keyPrefix: prefix, timeoutMs: 5000 });
    try {
      expect(await store.runs.createRun('RUN-live', '{"status":"running"}', 60_000, true)).toBe(true);
      expect(await store.runs.createRun('RUN-gone', '{"status":"running"}', 60_000, true)).toBe(true);
      await admin.del(keys.run('RUN-gone'));

      // The check is refused: nothing is taken out, not even the id whose record is gone (it is not known to be gone).
      const listed = await refused.runs.listActiveRuns().then(
        (ids) => ({ ids }),
        (error: { code?: string }) => ({ code: error.code }),
      );
      expect(listed).toEqual({ code: 'UHLP_INTERNAL' });
      expect((await admin.zrange(keys.activeRuns(), '0', '-1')).sort()).toEqual(['RUN-gone', 'RUN-live']);

      // A core that can check lists the live run (for its sweep to resume) and takes out the one whose record is gone.
      expect(await store.runs.listActiveRuns()).toEqual(['RUN-live']);
      expect(await admin.zrange(keys.activeRuns(), '0', '-1')).toEqual(['RUN-live']);
      expect(await store.runs.getRun('RUN-live')).toEqual({ json: '{"status":"running"}', version: 1 });
    } finally {
      await store.deleteAllKeys();
      await store.close();
      await refused.close();
    }
  });
});
