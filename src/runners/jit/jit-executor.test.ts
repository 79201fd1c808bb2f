import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DefinitionFile, ExecuteRequest } from '../../contract/execute-contract.js';
import { resultFromThrown } from '../kit/script-result.js';
import type { ExecutionTools } from '../kit/tools-client.js';
import { createJitExecutor } from './jit-executor.js';

const REVISION = 'c'.repeat(40);
const SCRIPT = "export const hello = (event) => ({ hello: event.triggerDetails?.payload?.name ?? 'world' });\n";

function request(script: string, definitionFiles?: DefinitionFile[], revision = REVISION): ExecuteRequest {
  return {
    requestId: 'r-1',
    requestData: { source: 'trigger', triggerDetails: { sourceAppId: 'test', triggerEvent: 'cache', payload: { name: 'ada' } } },
    context: {
      appId: 'desk',
      componentId: 'hello',
      mcp_endpoint: 'http://core/mcp',
      stateConfig: { type: 'mcp_tool' },
      configuration: {},
      applicationInfo: { deploymentMode: 'development' },
      taskDetails: { handler: 'JIT', revision, script, function: 'hello' },
    },
    ...(definitionFiles ? { definitionFiles } : {}),
  };
}

/** The core's MCP endpoint as the runner sees it: answers reads of `files`, and records every call. */
function fakeTools(files: Record<string, string>, answerRevision = REVISION): ExecutionTools & { calls: string[] } {
  const calls: string[] = [];
  const tools = {
    calls,
    call: async (name: string, args: Record<string, unknown> = {}) => {
      calls.push(`${name} ${String(args.path)}`);
      const content = files[String(args.path)];
      if (content === undefined) throw Object.assign(new Error('no such file'), { code: 'UHLP_DEFINITION_FILE_NOT_FOUND' });
      return { revision: answerRevision, content };
    },
  };
  return tools as unknown as ExecutionTools & { calls: string[] };
}

describe('the jit-runner reading scripts into its cache (pods: definitionsViaMcp)', () => {
  let root: string;
  let outside: string;

  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-jit-cache-'));
    outside = mkdtempSync(path.join(os.tmpdir(), 'uhlp-jit-outside-'));
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  });

  const executor = () => createJitExecutor({ definitionsRoot: root, definitionsViaMcp: true });
  const run = (execute: ReturnType<typeof executor>, req: ExecuteRequest, tools: ExecutionTools) => execute(req, tools).catch(resultFromThrown);

  it('keeps a script the core sent along, read-only, and runs it with no read through MCP; the first load only is reported', async () => {
    const execute = executor();
    const tools = fakeTools({});
    const first = await run(execute, request('scripts/hello.js', [{ path: 'scripts/hello.js', content: SCRIPT }]), tools);
    expect(first).toEqual({ resultType: 'generic', data: { hello: 'ada' }, metrics: { script_load_ms: expect.any(Number) } });
    const kept = path.join(root, REVISION, 'scripts', 'hello.js');
    expect(readFileSync(kept, 'utf8')).toBe(SCRIPT);
    expect(statSync(kept).mode & 0o777).toBe(0o444);
    // Written whole, then renamed: no part file is left beside it.
    expect(readdirSync(path.dirname(kept))).toEqual(['hello.js']);
    expect(tools.calls).toEqual([]);
    expect(await run(execute, request('scripts/hello.js'), tools)).toEqual({ resultType: 'generic', data: { hello: 'ada' } });
  });

  it('keeps what is in its cache: a script sent again is not written over it', async () => {
    mkdirSync(path.join(root, REVISION, 'scripts'), { recursive: true });
    const kept = path.join(root, REVISION, 'scripts', 'hello.js');
    writeFileSync(kept, "export const hello = () => ({ hello: 'kept' });\n");
    const before = statSync(kept);
    const sent = [{ path: 'scripts/hello.js', content: "export const hello = () => ({ hello: 'sent' });\n" }];
    expect(await run(executor(), request('scripts/hello.js', sent), fakeTools({}))).toMatchObject({ data: { hello: 'kept' } });
    expect(statSync(kept).ino).toBe(before.ino);
  });

  it('reads a script neither kept nor sent through MCP at the execution\'s revision; other sent files are not it', async () => {
    const tools = fakeTools({ 'scripts/hello.js': SCRIPT });
    const sentOther = [{ path: 'scripts/other.js', content: 'export const hello = () => 1;\n' }];
    expect(await run(executor(), request('scripts/hello.js', sentOther), tools)).toMatchObject({ resultType: 'generic', data: { hello: 'ada' } });
    expect(tools.calls).toEqual(['core.state.getDefinitionFileContent scripts/hello.js']);
    expect(existsSync(path.join(root, REVISION, 'scripts', 'other.js'))).toBe(false);

    expect(await run(executor(), request('scripts/missing.js'), fakeTools({}))).toMatchObject({ resultType: 'error', data: { code: 'UHLP_SCRIPT_NOT_FOUND' } });
    // An answer for another revision is not kept.
    const stale = fakeTools({ 'scripts/late.js': SCRIPT }, 'd'.repeat(40));
    expect(await run(executor(), request('scripts/late.js'), stale)).toMatchObject({ resultType: 'error', data: { code: 'UHLP_SCRIPT_LOAD_FAILED' } });
    expect(existsSync(path.join(root, REVISION, 'scripts', 'late.js'))).toBe(false);
  });

  it('writes nothing outside its cache, whatever path or revision a request names with a script sent along', async () => {
    const escape = path.relative(path.join(root, REVISION), path.join(outside, 'escaped.js'));
    const hostile: Array<[string, string]> = [
      [escape, REVISION],
      ['../../escaped.js', REVISION],
      [path.join(outside, 'escaped.js'), REVISION],
      ['scripts/hello.js', `../${path.basename(outside)}`],
      ['scripts/hello.cjs', REVISION],
    ];
    for (const [script, revision] of hostile) {
      const answer = await run(executor(), request(script, [{ path: script, content: SCRIPT }], revision), fakeTools({}));
      expect(answer).toMatchObject({ resultType: 'error', data: { code: 'UHLP_EXECUTE_BAD_REQUEST' } });
    }
    expect(readdirSync(outside)).toEqual([]);
    expect(readdirSync(root)).toEqual([]);
  });

  it('answers a script that does not load as its own error, and keeps serving', async () => {
    const execute = executor();
    const broken = [{ path: 'scripts/broken.js', content: 'export const hello = (' }];
    expect(await run(execute, request('scripts/broken.js', broken), fakeTools({}))).toMatchObject({ resultType: 'error', data: { code: 'UHLP_SCRIPT_LOAD_FAILED' } });
    expect(await run(execute, request('scripts/hello.js', [{ path: 'scripts/hello.js', content: SCRIPT }]), fakeTools({}))).toMatchObject({ data: { hello: 'ada' } });
  });
});
