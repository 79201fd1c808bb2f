/**
 * Replays docs/apps.md (or another guide) of a uhlp tree with that tree's own
 * `uhlp`: a fresh directory, a Redis key prefix of its own, removed afterwards.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './redis-url.js';
import { guideSteps, startWalkthrough, type Walkthrough } from './markdown-walkthrough.js';

export const APPS_GUIDE = 'docs/apps.md';

export async function replayGuide(uhlpRoot: string, guide = APPS_GUIDE): Promise<void> {
  const prefix = uniqueKeyPrefix('apps-guide');
  const walk: Walkthrough = startWalkthrough({
    uhlpRoot,
    replace: [['redis://127.0.0.1:6379', TEST_REDIS_URL]],
    env: { UHLP_STATE_PREFIX: prefix },
  });
  try {
    for (const step of guideSteps(readFileSync(path.join(uhlpRoot, guide), 'utf8'))) {
      await walk.run(step, `${guide}:${step.line}`);
    }
  } finally {
    await walk.stop();
    const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true });
    await redis.connect();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  }
}
