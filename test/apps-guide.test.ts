/**
 * docs/apps.md, replayed: every file block written into a fresh directory, every
 * command run by a real `uhlp` (process sandboxes, then Redis for the cs-js
 * part), every output compared with what the guide promises. A guide that
 * drifts from the core fails here, at its first stale line.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { REPO_ROOT } from './helpers/uhlp-process.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './helpers/redis-url.js';
import { guideSteps, outputMatches, startWalkthrough, type Walkthrough } from './helpers/markdown-walkthrough.js';

const GUIDE = 'docs/apps.md';

/** Replays a guide of `uhlpRoot` with `uhlpRoot`'s own uhlp; one Redis prefix of its own. */
export async function replayGuide(uhlpRoot: string, guide = GUIDE): Promise<void> {
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

describe('the app guide (docs/apps.md)', () => {
  it('reads its steps in order: files, commands and the lines they print', () => {
    const steps = guideSteps(['```yaml file=apps/a/app.yaml', 'x: 1', '```', '```console', '$ echo hi', 'hi', '$ true', '```', '```sh', 'not run', '```'].join('\n'));
    expect(steps).toEqual([
      { kind: 'file', line: 1, path: 'apps/a/app.yaml', content: 'x: 1\n' },
      { kind: 'command', line: 5, command: 'echo hi', expected: ['hi'] },
      { kind: 'command', line: 7, command: 'true', expected: [] },
    ]);
    expect(outputMatches(['{"id":"…"}'], '{"id":"abc"}\n')).toBe(true);
    expect(outputMatches(['{"id":"…"}'], '{"id":"abc"}\nmore')).toBe(false);
    expect(outputMatches(['a.c'], 'abc')).toBe(false);
  });

  it('holds from an empty directory to every kind of component, each answer as the guide says', async () => {
    const steps = guideSteps(readFileSync(path.join(REPO_ROOT, GUIDE), 'utf8'));
    expect(steps.filter((step) => step.kind === 'command').length).toBeGreaterThan(15);
    await replayGuide(REPO_ROOT);
  }, 600_000);
});
