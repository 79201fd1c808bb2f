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

describe("where a script's exception was thrown", () => {
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-jit-stack-'));
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  /** Writes `files` into the revision and runs `script`'s `hello`. */
  async function thrown(script: string, files: Record<string, string>): Promise<Record<string, any>> {
    for (const [file, content] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(root, REVISION, file)), { recursive: true });
      writeFileSync(path.join(root, REVISION, file), content);
    }
    const answer = await createJitExecutor({ definitionsRoot: root })(request(script), fakeTools({}));
    expect(answer.resultType).toBe('error');
    return answer.data as Record<string, any>;
  }

  it("answers the frames of the script's own files, relative to the app directory, and none of the runner's", async () => {
    const data = await thrown('scripts/click.mjs', {
      'scripts/click.mjs': "import { track } from '../lib/track.mjs';\nexport async function hello(event) {\n  return track(event);\n}\n",
      'lib/track.mjs': 'export function track(event) {\n  return clickz + event;\n}\n',
    });
    expect(data).toMatchObject({ code: 'UHLP_SCRIPT_EXCEPTION', message: 'clickz is not defined', status: 500 });
    expect(data.stack).toBe('at track (lib/track.mjs:2:3)\nat hello (scripts/click.mjs:3:10)');
    expect(data.stack).not.toContain(root);
  });

  it('neutralises a hostile exception: host paths made relative, no control characters, message and stack bounded', async () => {
    const data = await thrown('scripts/hostile.mjs', {
      'scripts/hostile.mjs': [
        'export function hello() {',
        "  const error = new Error('\\u001b[2J<script>alert(1)</script> ' + import.meta.url + ' ' + new URL(import.meta.url).pathname + ' ' + 'x'.repeat(100000));",
        "  error.stack = 'Error: fake\\n    at /etc/passwd (file:///etc/passwd:1:1)\\n' + Array.from({ length: 200 }, (_, i) => `    at f${i}\\u001b[31m (${import.meta.url}:${i + 1}:1)`).join('\\n');",
        '  throw error;',
        '}',
        '',
      ].join('\n'),
    });
    expect(data.message).not.toContain(root);
    expect(data.message).toContain('<script>alert(1)</script> scripts/hostile.mjs scripts/hostile.mjs ');
    expect(data.message).not.toMatch(/[\u0000-\u001f]/);
    expect(data.message.length).toBeLessThanOrEqual(2048);
    const frames = data.stack.split('\n');
    expect(frames).toHaveLength(20);
    expect(frames[0]).toBe('at f0\uFFFD[31m (scripts/hostile.mjs:1:1)');
    expect(data.stack).not.toContain('passwd');
    expect(data.stack).not.toContain(root);
    expect(data.stack.length).toBeLessThanOrEqual(4096);
  });

  it("answers a script whose import fails without the sandbox's paths in Node's message", async () => {
    mkdirSync(path.join(root, REVISION, 'scripts'), { recursive: true });
    writeFileSync(path.join(root, REVISION, 'scripts', 'lost.mjs'), "import '../lib/missing.mjs';\nexport const hello = () => 1;\n");
    const answer = await createJitExecutor({ definitionsRoot: root })(request('scripts/lost.mjs'), fakeTools({}));
    expect(answer).toMatchObject({ resultType: 'error', data: { code: 'UHLP_SCRIPT_LOAD_FAILED', message: expect.stringContaining('lib/missing.mjs') } });
    expect(JSON.stringify(answer)).not.toContain(root);
  });

  it("keeps an app's own error (a string code) as the app made it, without a stack", async () => {
    const data = await thrown('scripts/coded.mjs', {
      'scripts/coded.mjs': "export function hello() {\n  throw Object.assign(new Error('gone'), { code: 'GONE', status: 410 });\n}\n",
    });
    expect(data).toEqual({ code: 'GONE', message: 'gone', status: 410 });
  });
});
