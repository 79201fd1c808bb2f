/**
 * docs/apps.md, replayed: every file block written into a fresh directory, every
 * command run by a real `uhlp` (process sandboxes, then Redis for the cs-js
 * part), every output compared with what the guide promises. A guide that
 * drifts from the core fails here, at its first stale line.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/uhlp-process.js';
import { guideSteps, outputMatches } from './helpers/markdown-walkthrough.js';
import { APPS_GUIDE, replayGuide } from './helpers/apps-guide-replay.js';

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
    const steps = guideSteps(readFileSync(path.join(REPO_ROOT, APPS_GUIDE), 'utf8'));
    expect(steps.filter((step) => step.kind === 'command').length).toBeGreaterThan(15);
    await replayGuide(REPO_ROOT);
  }, 600_000);
});
