import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PooledSandbox } from './pool-strategy.js';
import { ScriptPush } from './script-push.js';

const REVISION = 'a'.repeat(40);
const sandbox = (): PooledSandbox => ({}) as PooledSandbox;

describe('ScriptPush', () => {
  let root: string;
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  function revision(files: Record<string, string | Buffer>): void {
    root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-push-'));
    for (const [name, content] of Object.entries(files)) {
      const file = path.join(root, 'shop', REVISION, name);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
  }

  it('sends a script once per sandbox, as a JSON member the request can take', async () => {
    revision({ 'scripts/hello.js': 'export default () => "hi";\n' });
    const push = new ScriptPush(root);
    const first = sandbox();
    const member = await push.member(first, 'shop', { revision: REVISION, path: 'scripts/hello.js' });
    expect(JSON.parse(`{${member}}`)).toEqual({ definitionFiles: [{ path: 'scripts/hello.js', content: 'export default () => "hi";\n' }] });
    expect(await push.member(first, 'shop', { revision: REVISION, path: 'scripts/hello.js' })).toBeUndefined();
    expect(await push.member(sandbox(), 'shop', { revision: REVISION, path: 'scripts/hello.js' })).toBe(member);
  });

  it('sends nothing of another app, outside the app directory, missing, or not UTF-8 (the runner reads it through MCP)', async () => {
    revision({ 'scripts/bin.js': Buffer.from([0xff, 0xfe, 0x00]), '../other/x.js': 'secret' });
    const push = new ScriptPush(root);
    expect(await push.member(sandbox(), 'shop', { revision: REVISION, path: '../../other/x.js' })).toBeUndefined();
    expect(await push.member(sandbox(), 'shop', { revision: REVISION, path: 'scripts/missing.js' })).toBeUndefined();
    expect(await push.member(sandbox(), 'shop', { revision: REVISION, path: 'scripts/bin.js' })).toBeUndefined();
    expect(await push.member(sandbox(), 'other', { revision: REVISION, path: 'scripts/bin.js' })).toBeUndefined();
  });
});
