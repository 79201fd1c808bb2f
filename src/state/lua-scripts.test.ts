import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadLuaScripts } from './lua-scripts.js';

describe('loadLuaScripts', () => {
  it('finds every script with the key count of its file name', () => {
    const scripts = loadLuaScripts();
    expect(scripts.get('rateLimit')?.numberOfKeys).toBe(1);
    expect([...scripts.keys()].sort()).toEqual([
      'cronFire',
      'flowEnter',
      'flowLeave',
      'flowRenew',
      'fnPublish',
      'idempotencyAbandon',
      'idempotencyBegin',
      'idempotencyBeginMany',
      'idempotencyComplete',
      'leaseAcquire',
      'leaseRelease',
      'leaseRenew',
      'llmTokensAdd',
      'oracleRecordPut',
      'oracleSampleAdd',
      'queueAck',
      'queueDeadLetter',
      'queuePromote',
      'queueRedrive',
      'queueRetry',
      'queueSettle',
      'rateLimit',
      'runCreate',
      'runUpdate',
      'runsPrune',
      'sessionCreate',
      'sessionNextTurn',
      'sessionQueueHead',
      'sessionQueueJoin',
      'sessionTouch',
    ]);
    for (const script of scripts.values()) {
      // A script touching KEYS[n] beyond its declared count would break on a cluster.
      const used = [...script.lua.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]));
      if (script.numberOfKeys === undefined) continue;
      expect(Math.max(...used)).toBeLessThanOrEqual(script.numberOfKeys);
    }
  });

  it('reads a key count given at each call from a -n file name', () => {
    const settle = loadLuaScripts().get('queueSettle');
    expect(settle?.numberOfKeys).toBeUndefined();
    // Its keys past the stream are walked up to the count the call gave, never a fixed index beyond it.
    expect(settle?.lua).toMatch(/for i = 2, #KEYS do/);
  });

  it('names the copy step when the directory is missing', () => {
    expect(() => loadLuaScripts(new URL('file:///nonexistent/lua/'))).toThrow(/copy-lua-scripts/);
  });

  it('finds the same scripts in a build output after the copy step', () => {
    const outDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-dist-'));
    try {
      execFileSync(process.execPath, ['scripts/copy-lua-scripts.mjs', outDir], { stdio: 'pipe' });
      const copied = loadLuaScripts(pathToFileURL(path.join(outDir, 'state', 'lua') + path.sep));
      expect([...copied.values()]).toEqual([...loadLuaScripts().values()]);
    } finally {
      rmSync(outDir, { recursive: true, force: true });
    }
  });
});
