import { describe, expect, it } from 'vitest';
import { loadLuaScripts } from './lua-scripts.js';

describe('loadLuaScripts', () => {
  it('finds every script with the key count of its file name', () => {
    const scripts = loadLuaScripts();
    expect(scripts.get('rateLimit')?.numberOfKeys).toBe(1);
    expect([...scripts.keys()].sort()).toEqual([
      'idempotencyAbandon',
      'idempotencyBegin',
      'idempotencyComplete',
      'leaseAcquire',
      'leaseRelease',
      'leaseRenew',
      'rateLimit',
      'sessionCreate',
      'sessionNextTurn',
      'sessionTouch',
    ]);
    for (const script of scripts.values()) {
      // A script touching KEYS[n] beyond its declared count would break on a cluster.
      const used = [...script.lua.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1]));
      expect(Math.max(...used)).toBeLessThanOrEqual(script.numberOfKeys);
    }
  });

  it('names the copy step when the directory is missing', () => {
    expect(() => loadLuaScripts(new URL('file:///nonexistent/lua/'))).toThrow(/copy-lua-scripts/);
  });
});
