import { describe, expect, it } from 'vitest';
import { scriptPlace } from './script-stack.js';

const place = scriptPlace(['file:///defs/abc/', '/defs/abc/']);
const thrown = (stack: unknown): unknown => ({ message: 'm', stack });

describe('scriptPlace', () => {
  const cases: Array<[name: string, stack: string, expected: string | undefined]> = [
    ['a named frame', 'Error: m\n    at track (file:///defs/abc/lib/track.mjs:2:3)', 'at track (lib/track.mjs:2:3)'],
    ['an anonymous frame', 'Error: m\n    at file:///defs/abc/scripts/a.mjs:7:1', 'at scripts/a.mjs:7:1'],
    ['async, new and method frames', 'Error: m\n    at async Promise.all (index 0)\n    at new Cart (file:///defs/abc/cart.mjs:1:2)\n    at async Cart.total (file:///defs/abc/cart.mjs:3:4)', 'at new Cart (cart.mjs:1:2)\nat async Cart.total (cart.mjs:3:4)'],
    ['a path, not a URL', 'Error: m\n    at f (/defs/abc/a.js:1:1)', 'at f (a.js:1:1)'],
    ['a percent-encoded file name', 'Error: m\n    at f (file:///defs/abc/my%20script.mjs:1:1)', 'at f (my script.mjs:1:1)'],
    ["the runner's and Node's frames only", 'Error: m\n    at run (file:///app/dist/runners/jit/jit-executor.js:1:1)\n    at node:internal/process/task_queues:95:5', undefined],
    ['a frame of another directory named like it', 'Error: m\n    at f (file:///defs/abcdef/a.js:1:1)', undefined],
    ['no frames at all', 'just text', undefined],
  ];
  it.each(cases)('%s', (_name, stack, expected) => {
    expect(place.stackOf(thrown(stack))).toBe(expected);
  });

  it('reads no stack from a value without one, or whose stack getter throws', () => {
    expect(place.stackOf('a string')).toBeUndefined();
    expect(place.stackOf(thrown(42))).toBeUndefined();
    expect(place.stackOf(Object.defineProperty({}, 'stack', { get: () => { throw new Error('no'); } }))).toBeUndefined();
  });

  it("makes a message's paths relative, without control characters, bounded", () => {
    expect(place.message('cannot read /defs/abc/data.json\u001b[0m')).toBe('cannot read data.json\uFFFD[0m');
    expect(place.message('x'.repeat(10_000))).toHaveLength(2048);
  });
});
