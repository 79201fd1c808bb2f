import { describe, expect, it } from 'vitest';
import type { CapabilitiesSpec } from '../../apps/schema/app-definition-schema.js';
import { candidateCapabilities } from '../../oracle/eligibility.js';
import { refusalRule, serverMayBeGranted, toolGrant } from './tool-grant.js';

const capabilities: CapabilitiesSpec = {
  mcp: { allow: ['app.fs.*', 'app.everything.echo', 'community.*.search'], forbidden: ['app.fs.write_*', 'APP.FS.DELETE'] },
};

describe('capabilities.mcp as one predicate for listing and calling', () => {
  it.each([
    ['app.fs.read_file', true, undefined],
    ['app.fs.list_directory', true, undefined],
    ['app.fs.write_file', false, 'forbidden'],
    // forbidden ignores case: a server cannot slip past it by spelling.
    ['app.fs.delete', false, 'forbidden'],
    ['app.everything.echo', true, undefined],
    ['app.everything.echo2', false, 'allow'],
    ['app.everything.get-sum', false, 'allow'],
    ['community.web.search', true, undefined],
    ['community.web.fetch', false, 'allow'],
    ['core.kv.get', false, 'allow'],
  ])('%s: granted %s', (name, granted, rule) => {
    expect(toolGrant(capabilities)(name)).toBe(granted);
    if (rule !== undefined) expect(refusalRule(capabilities, name)).toBe(rule);
  });

  it('grants nothing and says absent without the capability', () => {
    expect(toolGrant({})('app.fs.read_file')).toBe(false);
    expect(refusalRule({}, 'app.fs.read_file')).toBe('absent');
  });

  it.each([
    ['app.fs', true],
    ['app.everything', true],
    ['app.memory', false],
    ['community.web', true],
    ['community.other', true],
  ])('asks server %s for its list: %s', (server, asked) => {
    expect(serverMayBeGranted(capabilities, server)).toBe(asked);
  });
});

describe('capabilities.mcp globs', () => {
  it.each([
    ['app.fs.*', 'app.fs.read_file', true],
    ['app.*', 'app.fs.read_file', true],
    ['app.fs*', 'app.fs.read_file', true],
    ['*.fs.read_file', 'community.fs.read_file', true],
    ['app.fs.read_?ile', 'app.fs.read_file', true],
    ['app.fs.read_?ile', 'app.fs.read_ffile', false],
    ['app.fs.read', 'app.fs.read_file', false],
    ['community.*.*', 'app.fs.read', false],
  ])('%s on %s: %s', (glob, name, granted) => {
    expect(toolGrant({ mcp: { allow: [glob], forbidden: [] } })(name)).toBe(granted);
  });

  it("check a name in time linear in the name and the glob, whatever stars the app's glob has", () => {
    // As picomatch compiles it, this glob backtracks about n^6 / 6! times on a name of n a's: seconds at 80.
    const mcp = { allow: ['app.*a*a*a*a*a*b'], forbidden: ['app.*a*a*a*a*a*c'] };
    const started = performance.now();
    expect(toolGrant({ mcp })(`app.${'a'.repeat(80)}`)).toBe(false);
    expect(toolGrant({ mcp })(`app.${'a'.repeat(10_000)}b`)).toBe(true);
    expect(refusalRule({ mcp }, `app.${'a'.repeat(10_000)}`)).toBe('allow');
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe("the oracle's candidate capabilities", () => {
  it("keep exactly the federated tools the component lists and the app grants, with the app's forbidden globs", () => {
    expect(candidateCapabilities(capabilities, ['app.fs.read_file', 'app.fs.write_file', 'app.memory.read_graph', 'core.llm.generate'])).toEqual({
      mcp: { allow: ['app.fs.read_file'], forbidden: ['app.fs.write_*', 'APP.FS.DELETE'] },
    });
    expect(candidateCapabilities(capabilities, ['core.llm.generate'])).toEqual({});
  });
});
