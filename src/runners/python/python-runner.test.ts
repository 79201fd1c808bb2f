/**
 * The python runner as the core sees it: started with Debian's python3 on a Unix
 * socket (unisolated: the sandboxes around it are the drivers' suites'), asked over
 * HTTP. What a script returns or raises maps as the jit-runner maps it
 * (src/runners/kit/script-result.test.ts), the contract is checked as the Node
 * runners check it, and no bytecode is written.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateExecuteResponse, type ExecuteRequest } from '../../contract/execute-contract.js';
import { DEFAULT_PYTHON_PATH, PYTHON_FLAGS } from '../../images/python-runtime.js';
import { seccompFilter } from '../../sandbox/seccomp-filter.js';
import { SandboxClient } from '../../sandbox/sandbox-client.js';
import { waitFor } from '../../../test/helpers/wait-for.js';
import { Http1ResponseParser, type ParsedResponse } from '../../shared/http1/response-parser.js';
import { pythonRunnerDir, startPythonRunner, type StartedPythonRunner } from '../../../test/helpers/python-runner.js';

const REVISION = 'c0ffee0123456789abcdef0123456789abcdef01';

const SCRIPT = `
import asyncio, os, sys, tempfile

def handler(event, ctx):
    return {"handler": True}

def echo(event, ctx):
    return {"source": event["source"], "name": event["triggerDetails"]["payload"]["name"], "appId": ctx.appId, "greeting": ctx["configuration"]["greeting"], "token": ctx.get("mcp_token")}

def http_text(event, ctx):
    return {"statusCode": 201, "headers": {"x-n": 5, "x-ok": True, "x-list": [1, "a"], "x-none": None}, "body": "made"}

def http_bytes(event, ctx):
    return {"statusCode": 200, "headers": {"content-type": "application/octet-stream"}, "body": bytes([0, 1, 254, 255])}

def http_base64(event, ctx):
    return {"statusCode": 200, "body": "AAE=", "isBase64Encoded": True}

def http_json(event, ctx):
    return {"statusCode": 200, "body": {"a": 1}}

def http_bad_status(event, ctx):
    return {"statusCode": 700}

def string_status(event, ctx):
    return {"statusCode": "200"}

def nothing(event, ctx):
    return None

def a_list(event, ctx):
    return [1, "two", None, 2.5, "é"]

def a_set(event, ctx):
    return {1, 2}

def not_a_number(event, ctx):
    return {"x": float("nan")}

def cyclic(event, ctx):
    value = {}
    value["self"] = value
    return value

class Conflict(Exception):
    code = "CONFLICT"
    status = 409
    def __init__(self):
        super().__init__("already exists")
        self.details = {"id": 7}

def coded(event, ctx):
    raise Conflict()

class Teapot(Exception):
    code = "TEAPOT"
    statusCode = 418

def coded_status_code(event, ctx):
    raise Teapot("short and stout")

def numeric_code(event, ctx):
    error = ValueError("e")
    error.code = 5
    raise error

def plain(event, ctx):
    raise KeyError("user")

def empty(event, ctx):
    raise RuntimeError()

def hostile(event, ctx):
    raise ValueError("\x1b[31m<b>" + __file__ + "</b>\u2028" + "x" * 10000)

def deep(event, ctx, n=0):
    if n < 50:
        return deep(event, ctx, n + 1)
    raise RuntimeError("deep")

def via_library(event, ctx):
    import json
    return json.loads("{not json")

async def awaited(event, ctx):
    await asyncio.sleep(0.01)
    return {"awaited": True}

async def slow(event, ctx):
    await asyncio.sleep(0.4)
    return {"slow": True}

def ends(event, ctx):
    sys.exit(3)

def hog(event, ctx):
    keep = []
    while True:
        keep.append([0.5] * 1_000_000)

def shared_hog(event, ctx):
    import mmap
    mb = event["triggerDetails"]["payload"]["mb"]
    size = mb * 1024 * 1024
    try:
        shared = mmap.mmap(-1, size)
    except OSError as error:
        return {"refused": error.strerror}
    for offset in range(0, size, 4096):
        shared[offset] = 1
    return {"touched_mb": mb}

def lone_surrogate(event, ctx):
    return "\\ud800"

def surrogate_in_list(event, ctx):
    return {"items": ["fine", "caf\\udce9"]}

def surrogate_header(event, ctx):
    return {"statusCode": 200, "headers": {"x-name": "\\udfff"}, "body": "ok"}

def surrogate_body(event, ctx):
    return {"statusCode": 200, "body": "\\ud83d"}

class SurrogateError(Exception):
    code = "BROKEN"

def surrogate_message(event, ctx):
    raise SurrogateError("bad \\ud800 name")

def surrogate_exception(event, ctx):
    raise ValueError("\\udc80")

def temp(event, ctx):
    with tempfile.NamedTemporaryFile(dir=None, delete=False) as handle:
        handle.write(b"x")
    return {"env": [os.environ["TMPDIR"], os.environ["TEMP"], os.environ["TMP"]], "file": os.path.dirname(handle.name), "gettempdir": tempfile.gettempdir(), "workspace": ctx.workspace, "dont_write_bytecode": sys.dont_write_bytecode}

def spawns(event, ctx):
    import subprocess, threading
    def attempt(fn):
        try:
            fn()
            return "ok"
        except OSError as error:
            return error.strerror
    box = []
    thread = threading.Thread(target=lambda: box.append("thread"))
    thread.start()
    thread.join()
    with tempfile.NamedTemporaryFile(delete=False) as handle:
        handle.write(b"x")
    return {"fork": attempt(os.fork), "subprocess": attempt(lambda: subprocess.run(["/bin/true"])), "thread": box, "wrote": os.path.exists(handle.name)}

def scatter_tree(event, ctx):
    root = os.path.dirname(os.path.dirname(ctx.workspace.outputDir))
    with open(os.path.join(ctx.workspace.outputDir, "report.json"), "w") as handle:
        handle.write("{}")
    with open(os.path.join(root, "beside.txt"), "w") as handle:
        handle.write("left for the next session")
    os.makedirs(os.path.join(root, "tmp", "other-session"))
    with open(os.path.join(root, "tmp", "other-session", "planted"), "w") as handle:
        handle.write("p")
    os.symlink("/etc/passwd", os.path.join(ctx.workspace.tmpDir, "link"))
    os.mkfifo(os.path.join(ctx.workspace.tmpDir, "pipe"))
    return {"ok": True}

not_callable = 5

def timed(event, ctx):
    try:
        ctx.tools.call("core.kv.get", {"key": "k"})
    except Exception:
        pass
    return {"timed": True}
`;

let defs: string;
let work: string;
let runner: StartedPythonRunner;
let client: SandboxClient;

function request(requestId: string, task: Record<string, unknown>, extra: Partial<ExecuteRequest['context']> = {}): ExecuteRequest {
  return {
    requestId,
    requestData: { source: 'trigger', triggerDetails: { sourceAppId: 'test', triggerEvent: 'unit', payload: { name: 'ada' } } },
    context: {
      appId: 'py',
      componentId: 'c',
      mcp_endpoint: 'http://core/mcp',
      stateConfig: { type: 'mcp_tool' },
      configuration: { greeting: 'hi' },
      applicationInfo: { deploymentMode: 'development' },
      taskDetails: { handler: 'JIT', revision: REVISION, script: 'scripts/unit.py', ...task } as ExecuteRequest['context']['taskDetails'],
      ...extra,
    },
  };
}

let counter = 0;
/** Runs `fn` of scripts/unit.py (or another task) and answers the parsed /execute answer. */
async function run(task: Record<string, unknown>, extra: Partial<ExecuteRequest['context']> = {}, on: SandboxClient = client): Promise<Record<string, any>> {
  const id = `u-${++counter}`;
  const response = await on.execute(JSON.stringify(request(id, task, extra)), id, 5000);
  expect(response.status).toBe(200);
  const answer = JSON.parse(response.body.toString()) as Record<string, any>;
  expect(validateExecuteResponse(answer)).toBeUndefined();
  expect(answer.requestId).toBe(id);
  return answer;
}

beforeAll(async () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-pyunit-'));
  defs = path.join(root, 'defs');
  work = path.join(root, 'work');
  mkdirSync(path.join(defs, REVISION, 'scripts'), { recursive: true });
  for (const dir of ['tmp/s1', 'output/s1']) mkdirSync(path.join(work, dir), { recursive: true });
  writeFileSync(path.join(defs, REVISION, 'scripts', 'unit.py'), SCRIPT);
  writeFileSync(path.join(defs, REVISION, 'scripts', 'broken.py'), 'def handler(event, ctx)\n    return 1\n');
  writeFileSync(path.join(defs, REVISION, 'scripts', 'raising.py'), 'raise ImportError("no such thing")\n');
  writeFileSync(path.join(defs, REVISION, 'scripts', 'greet.js'), 'export default () => 1;\n');
  runner = await startPythonRunner(['--definitions', defs, '--work-dir', work, '--memory-mb', '64']);
  client = new SandboxClient({ kind: 'unix', socketPath: runner.socketPath });
});

afterAll(async () => {
  client?.close();
  await runner?.stop();
});

describe('what a Python script returns or raises', () => {
  const cases: Array<[fn: string, resultType: string, data: unknown]> = [
    ['echo', 'generic', { source: 'trigger', name: 'ada', appId: 'py', greeting: 'hi', token: null }],
    ['http_text', 'httpResponse', { statusCode: 201, headers: { 'x-n': '5', 'x-ok': 'true', 'x-list': ['1', 'a'] }, body: 'made', bodyEncoding: 'utf8' }],
    ['http_bytes', 'httpResponse', { statusCode: 200, headers: { 'content-type': 'application/octet-stream' }, body: 'AAH+/w==', bodyEncoding: 'base64' }],
    ['http_base64', 'httpResponse', { statusCode: 200, headers: {}, body: 'AAE=', bodyEncoding: 'base64' }],
    ['http_json', 'httpResponse', { statusCode: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"a":1}', bodyEncoding: 'utf8' }],
    ['http_bad_status', 'error', { code: 'UHLP_SCRIPT_BAD_RESULT', message: 'statusCode must be an integer 100-599, got 700', status: 500 }],
    ['string_status', 'generic', { statusCode: '200' }],
    ['nothing', 'generic', null],
    ['a_list', 'generic', [1, 'two', null, 2.5, 'é']],
    ['a_set', 'error', { code: 'UHLP_SCRIPT_BAD_RESULT', message: 'the returned value is not JSON-serializable', status: 500 }],
    ['not_a_number', 'error', { code: 'UHLP_SCRIPT_BAD_RESULT', message: 'the returned value is not JSON-serializable', status: 500 }],
    ['cyclic', 'error', { code: 'UHLP_SCRIPT_BAD_RESULT', message: 'the returned value is not JSON-serializable', status: 500 }],
    ['coded', 'error', { code: 'CONFLICT', message: 'already exists', status: 409, details: { id: 7 } }],
    ['coded_status_code', 'error', { code: 'TEAPOT', message: 'short and stout', status: 418 }],
    ['numeric_code', 'error', { code: 'UHLP_SCRIPT_EXCEPTION', message: 'ValueError: e', status: 500, stack: 'at numeric_code (scripts/unit.py:65:5)' }],
    ['plain', 'error', { code: 'UHLP_SCRIPT_EXCEPTION', message: "KeyError: 'user'", status: 500, stack: 'at plain (scripts/unit.py:68:5)' }],
    ['empty', 'error', { code: 'UHLP_SCRIPT_EXCEPTION', message: 'RuntimeError', status: 500, stack: 'at empty (scripts/unit.py:71:5)' }],
    // A lone surrogate: a str Python holds and UTF-8 cannot say. The answer is UTF-8; the runner must not fail writing it.
    ['lone_surrogate', 'error', { code: 'UHLP_SCRIPT_BAD_RESULT', message: 'the returned value is not JSON-serializable', status: 500 }],
    ['surrogate_in_list', 'error', { code: 'UHLP_SCRIPT_BAD_RESULT', message: 'the returned value is not JSON-serializable', status: 500 }],
    ['surrogate_header', 'error', { code: 'UHLP_SCRIPT_BAD_RESULT', message: expect.stringMatching(/lone surrogate/), status: 500 }],
    ['surrogate_body', 'error', { code: 'UHLP_SCRIPT_BAD_RESULT', message: expect.stringMatching(/lone surrogate/), status: 500 }],
    // An exception's message is the runner's to send: escaped, as JSON may.
    ['surrogate_message', 'error', { code: 'BROKEN', message: 'bad \ud800 name' }],
    ['surrogate_exception', 'error', { code: 'UHLP_SCRIPT_EXCEPTION', message: 'ValueError: \udc80', status: 500, stack: 'at surrogate_exception (scripts/unit.py:132:5)' }],
    ['awaited', 'generic', { awaited: true }],
    ['handler', 'generic', { handler: true }],
    ['default', 'generic', { handler: true }],
  ];
  it.each(cases)('%s -> %s', async (fn, resultType, data) => {
    const answer = await run({ function: fn });
    expect(answer).toMatchObject({ resultType, metrics: { execution_time_ms: expect.any(Number) } });
    expect(answer.data).toEqual(data);
    // A traceback never leaves the runner.
    expect(JSON.stringify(answer.data)).not.toMatch(/Traceback|File "/);
  });

  it("keeps a script exception's frames of the script's own files only: relative paths, most recent first, at most 20 frames", async () => {
    const deep = (await run({ function: 'deep' })).data;
    expect(deep.message).toBe('RuntimeError: deep');
    const frames = deep.stack.split('\n');
    expect(frames).toHaveLength(20);
    expect(frames[0]).toMatch(/^at deep \(scripts\/unit\.py:\d+:\d+\)$/);
    // A library's frames (json's, the runner's own) are not the script's: only the line that called it is.
    const library = (await run({ function: 'via_library' })).data;
    expect(library.message).toMatch(/^JSONDecodeError: /);
    expect(library.stack).toMatch(/^at via_library \(scripts\/unit\.py:\d+:\d+\)$/);
  });

  it('neutralises a hostile message: no host path, no control characters, bounded', async () => {
    const { data } = await run({ function: 'hostile' });
    expect(data.message).not.toContain(defs);
    expect(data.message).toContain('<b>scripts/unit.py</b>');
    expect(data.message).not.toMatch(/[\u0000-\u001f\u2028]/);
    expect(data.message.length).toBeLessThanOrEqual(2048);
    expect(data.stack).toMatch(/^at hostile \(scripts\/unit\.py:\d+:\d+\)$/);
  });

  it("calls the script's handler when the component names no function", async () => {
    expect((await run({})).data).toEqual({ handler: true });
  });

  it("reports the script's first load, and only that one", async () => {
    const fresh = await startPythonRunner(['--definitions', defs]);
    const own = new SandboxClient({ kind: 'unix', socketPath: fresh.socketPath });
    try {
      expect((await run({ function: 'handler' }, {}, own)).metrics.script_load_ms).toEqual(expect.any(Number));
      expect((await run({ function: 'handler' }, {}, own)).metrics.script_load_ms).toBeUndefined();
    } finally {
      own.close();
      await fresh.stop();
    }
  });
});

describe('scripts the runner cannot run', () => {
  const cases: Array<[name: string, task: Record<string, unknown>, code: string, message: RegExp]> = [
    ['a missing script', { script: 'scripts/missing.py' }, 'UHLP_SCRIPT_NOT_FOUND', /does not exist in revision c0ffee012345/],
    ['a syntax error', { script: 'scripts/broken.py' }, 'UHLP_SCRIPT_LOAD_FAILED', /SyntaxError: .* \(line 1\)/],
    ['a script that raises while it loads', { script: 'scripts/raising.py' }, 'UHLP_SCRIPT_LOAD_FAILED', /ImportError: no such thing/],
    ['a missing function', { function: 'nope' }, 'UHLP_FUNCTION_NOT_FOUND', /has no function "nope"/],
    ['a name that is no function', { function: 'not_callable' }, 'UHLP_FUNCTION_NOT_FOUND', /not_callable/],
    ['a class', { function: 'Conflict' }, 'UHLP_FUNCTION_NOT_FOUND', /Conflict/],
    ['a path out of the app', { script: '../other/unit.py' }, 'UHLP_EXECUTE_BAD_REQUEST', /leaves the app directory/],
    ['a JavaScript module', { script: 'scripts/greet.js' }, 'UHLP_EXECUTE_BAD_REQUEST', /not a \.py Python module/],
    ['a revision that is no commit', { revision: 'HEAD' }, 'UHLP_EXECUTE_BAD_REQUEST', /not a commit id/],
    ['an LLM task', { handler: 'LLM', llm: { prompt: 'p.njk' } }, 'UHLP_EXECUTE_BAD_REQUEST', /must name a JIT script/],
    ["an oracle candidate (an ES module)", { function: 'handler', oracle: { source: 'export default () => 1', inputs: {} } }, 'UHLP_EXECUTE_BAD_REQUEST', /optimization oracle/],
  ];
  it.each(cases)('%s', async (_name, task, code, message) => {
    const answer = await run(task);
    expect(answer).toMatchObject({ resultType: 'error', data: { code, status: 500 } });
    expect(answer.data.message).toMatch(message);
  });
});

describe('the contract', () => {
  it('refuses a request without a request id, one whose id differs, one that is not JSON and one that breaks the schema', async () => {
    const body = JSON.stringify(request('c-1', { function: 'handler' }));
    const [missing, differs, notJson, broken, badDetails] = await Promise.all([
      raw(`POST /execute HTTP/1.1\r\nhost: r\r\ncontent-length: ${body.length}\r\n\r\n${body}`),
      client.execute(body, 'c-2', 3000),
      client.execute('nope!', 'c-3', 3000),
      client.execute('{"requestId":"c-4","requestData":{"source":"ftp"}}', 'c-4', 3000),
      client.execute(JSON.stringify({ ...request('c-5', {}), requestData: { source: 'http' } }), 'c-5', 3000),
    ]);
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.body.toString())).toMatchObject({ error: 'UHLP_EXECUTE_BAD_REQUEST', details: /X-Request-ID/ });
    expect([differs.status, notJson.status, broken.status, badDetails.status]).toEqual([400, 400, 400, 400]);
    expect(JSON.parse(differs.body.toString()).details).toBe('requestId does not match the X-Request-ID header');
    expect(JSON.parse(notJson.body.toString()).details).toBe('the body is not JSON');
    expect(JSON.parse(broken.body.toString()).details).toMatch(/^\/requestData\/source: /);
    expect(JSON.parse(badDetails.body.toString()).details).toBe('/requestData/httpDetails: required when source is "http"');
  });

  it('answers GET /healthz, 404 elsewhere and 405 for another method on /execute, and echoes the request id', async () => {
    expect(await raw('GET /healthz HTTP/1.1\r\nhost: r\r\n\r\n')).toMatchObject({ status: 200 });
    expect(JSON.parse((await raw('GET /healthz HTTP/1.1\r\nhost: r\r\n\r\n')).body.toString())).toEqual({ status: 'ok', busy: false, running: 0 });
    expect((await raw('GET /nope HTTP/1.1\r\nhost: r\r\n\r\n')).status).toBe(404);
    expect((await raw('PUT /execute HTTP/1.1\r\nhost: r\r\ncontent-length: 2\r\n\r\n{}')).status).toBe(405);
    const body = JSON.stringify(request('e-1', { function: 'handler' }));
    const echoed = await rawText(`POST /execute HTTP/1.1\r\nhost: r\r\nx-request-id: e-1\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    expect(echoed).toMatch(/^HTTP\/1\.1 200 OK\r\n(.*\r\n)*x-request-id: e-1\r\n/);
  });

  it('runs one execution at a time by default and refuses one more with 429', async () => {
    const second = new SandboxClient({ kind: 'unix', socketPath: runner.socketPath });
    try {
      const slow = run({ function: 'slow' });
      const health = new SandboxClient({ kind: 'unix', socketPath: runner.socketPath });
      // The slow execution must be running before the second is sent, however loaded the machine.
      await waitFor(async () => (await health.health(1000))?.running === 1, { timeoutMs: 15_000, what: 'the slow execution to run' });
      health.close();
      const busy = await second.execute(JSON.stringify(request('b-1', { function: 'handler' })), 'b-1', 3000);
      expect(busy.status).toBe(429);
      expect(JSON.parse(busy.body.toString())).toMatchObject({ error: 'UHLP_RUNNER_BUSY', details: expect.stringMatching(/^busy with u-\d+$/) });
      expect((await slow).data).toEqual({ slow: true });
    } finally {
      second.close();
    }
  });

  it('knows every keyword of the schema the build writes from the TypeBox source', () => {
    const dir = pythonRunnerDir();
    const unknown = execFileSync(DEFAULT_PYTHON_PATH, ['-B', '-E', '-S', '-c', 'import execute_contract as c, json; print(json.dumps(sorted(c.schema_keywords() - c.KNOWN_KEYWORDS)))'], { cwd: dir, encoding: 'utf8' });
    expect(JSON.parse(unknown)).toEqual([]);
  });

  it('refuses a bad command line with exit status 64', () => {
    for (const args of [['--listen', 'tcp:nowhere'], ['--bogus'], ['--listen', 'unix:/tmp/x.sock', '--definitions', '/tmp', '--concurrency', '0']]) {
      let status = 0;
      try {
        execFileSync(DEFAULT_PYTHON_PATH, ['-B', '-E', '-S', path.join(pythonRunnerDir(), 'main.py'), ...args], { stdio: 'pipe' });
      } catch (error) {
        status = (error as { status: number }).status;
      }
      expect(status, args.join(' ')).toBe(64);
    }
  });
});

describe('the write surface', () => {
  it("points TMPDIR, TEMP, TMP and tempfile at the turn's tmp directory, and writes no bytecode anywhere", async () => {
    const answer = await run({ function: 'temp' }, { workspace: { tmpDir: 'tmp/s1', outputDir: 'output/s1' } });
    const tmpDir = path.join(work, 'tmp/s1');
    expect(answer.data).toEqual({
      env: [tmpDir, tmpDir, tmpDir],
      file: tmpDir,
      gettempdir: tmpDir,
      workspace: { tmpDir, outputDir: path.join(work, 'output/s1') },
      dont_write_bytecode: true,
    });
    const everything = [...readdirSync(defs, { recursive: true }), ...readdirSync(work, { recursive: true }), ...readdirSync(path.dirname(runner.socketPath), { recursive: true })].map(String);
    expect(everything.filter((name) => name.includes('__pycache__') || name.endsWith('.pyc'))).toEqual([]);
  });

  it('makes no absolute workspace of one that leaves the work tree, and points TMPDIR nowhere near it', async () => {
    const answer = await run({ function: 'temp' }, { workspace: { tmpDir: '../../etc', outputDir: 'output/s1' } });
    // As in the jit-runner: the context as sent, unresolved.
    expect(answer.data.workspace).toEqual({ tmpDir: '../../etc', outputDir: 'output/s1' });
    expect(answer.data.env[0]).not.toMatch(/etc/);
  });
});

describe('the walk of its work tree, when the core asks (reportWrites: pods)', () => {
  async function walked(sessionId: string, reportWrites: boolean): Promise<Record<string, any>> {
    const id = `w-${++counter}`;
    const body = { ...request(id, { function: 'scatter_tree' }, { sessionId, workspace: { tmpDir: `tmp/${sessionId}`, outputDir: `output/${sessionId}` } }), ...(reportWrites ? { reportWrites } : {}) };
    const response = await client.execute(JSON.stringify(body), id, 5000);
    const answer = JSON.parse(response.body.toString()) as Record<string, any>;
    expect(validateExecuteResponse(answer)).toBeUndefined();
    return answer;
  }

  it('makes the turn directories, reports every file (hashed), link, FIFO and stray by the core rules, and empties the tree', async () => {
    const answer = await walked('s-walk', true);
    expect(answer.data).toEqual({ ok: true });
    const realized = answer.writes.realized as Array<{ path: string; kind: string; size: number; hash?: string }>;
    // What earlier tests' turns (session s1, not running now) left in the tree is found too, as strays.
    const earlier = realized.filter((w) => w.path.startsWith('tmp/s1/'));
    expect(earlier.length).toBeGreaterThan(0);
    expect(realized.filter((w) => !earlier.includes(w)).map((w) => `${w.path} ${w.kind} ${w.size}`).sort()).toEqual([
      'beside.txt file 25',
      'output/report.json file 2',
      'tmp/link symlink 0',
      'tmp/other-session/planted file 1',
      'tmp/pipe fifo 0',
    ]);
    // The same hash the core's walk gives: sha256 of "{}".
    expect(realized.find((w) => w.path === 'output/report.json')!.hash).toBe('sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
    expect(answer.writes.emptied).toBe(true);
    expect(readdirSync(work).sort()).toEqual(['output', 'tmp']);
    // Another session's directories go with what was in them; the turn's own stay, empty.
    expect(readdirSync(path.join(work, 'tmp')).sort()).toEqual(['s-walk']);
    expect(readdirSync(path.join(work, 'tmp', 's-walk'))).toEqual([]);
    expect(readdirSync(path.join(work, 'output', 's-walk'))).toEqual([]);
  });

  it('walks nothing unless asked, and nothing for a session id that is not one path segment', async () => {
    // Not asked: the script's own directories were made by the previous turn; this one fails on nothing it needs.
    const plain = await walked('s-walk', false);
    expect(plain.writes).toBeUndefined();
    for (const sessionId of ['..', 'a/b']) expect((await walked(sessionId, true)).writes).toBeUndefined();
  });
});

describe('a script that takes its process down', () => {
  it('ends the runner when it calls sys.exit(), with no answer, as process.exit() does', async () => {
    const own = await startPythonRunner(['--definitions', defs]);
    const ownClient = new SandboxClient({ kind: 'unix', socketPath: own.socketPath });
    try {
      await expect(ownClient.execute(JSON.stringify(request('x-1', { function: 'ends' })), 'x-1', 3000)).rejects.toMatchObject({ name: 'SandboxTransportError' });
      expect(await own.exited).toBe(3);
    } finally {
      ownClient.close();
      await own.stop();
    }
  });

  it('keeps serving after results it cannot encode, every execution on it answered', async () => {
    for (const fn of ['lone_surrogate', 'surrogate_header', 'surrogate_message']) expect((await run({ function: fn })).resultType).toBe('error');
    expect(await run({ function: 'a_list' })).toMatchObject({ resultType: 'generic', data: [1, 'two', null, 2.5, 'é'] });
  });

  it('bounds shared memory by --memory-mb too: a MAP_SHARED mapping past it is refused, one within it works', async () => {
    const own = await startPythonRunner(['--definitions', defs, '--memory-mb', '128']);
    const ownClient = new SandboxClient({ kind: 'unix', socketPath: own.socketPath });
    try {
      const answer = async (mb: number, id: string): Promise<unknown> => {
        const body = request(id, { function: 'shared_hog' });
        body.requestData = { source: 'trigger', triggerDetails: { sourceAppId: 'test', triggerEvent: 'unit', payload: { mb } } } as ExecuteRequest['requestData'];
        return JSON.parse((await ownClient.execute(JSON.stringify(body), id, 20_000)).body.toString('utf8')).data;
      };
      expect(await answer(512, 's-1')).toEqual({ refused: 'Cannot allocate memory' });
      expect(await answer(32, 's-2')).toEqual({ touched_mb: 32 });
    } finally {
      ownClient.close();
      await own.stop();
    }
  });

  it('ends the runner as a heap limit (status 134, "heap out of memory") when it fills its --memory-mb', async () => {
    const own = await startPythonRunner(['--definitions', defs, '--memory-mb', '48']);
    const ownClient = new SandboxClient({ kind: 'unix', socketPath: own.socketPath });
    try {
      await expect(ownClient.execute(JSON.stringify(request('m-1', { function: 'hog' })), 'm-1', 10_000)).rejects.toMatchObject({ name: 'SandboxTransportError' });
      expect(await own.exited).toBe(134);
      expect(own.stderr()).toMatch(/heap out of memory.*\(limit 48 MB\)/);
    } finally {
      ownClient.close();
      await own.stop();
    }
  });
});

describe('what it times for a traced execution (metrics.timings)', () => {
  it("reports the script's run and each tool call with its outcome to a core that names the trace, and nothing to one that does not", async () => {
    const send = async (id: string, traceId?: string): Promise<Record<string, any>> => {
      const response = await client.execute(JSON.stringify(request(id, { function: 'timed' })), id, 5000, traceId);
      expect(response.status).toBe(200);
      const answer = JSON.parse(response.body.toString()) as Record<string, any>;
      expect(validateExecuteResponse(answer)).toBeUndefined();
      return answer;
    };
    const traced = await send('t-1', '0123456789abcdef0123456789abcdef');
    expect(traced.data).toEqual({ timed: true });
    const { timings } = traced.metrics;
    expect(timings.run).toEqual({ start_ms: expect.any(Number), duration_ms: expect.any(Number) });
    expect(timings.tool_calls).toEqual([{ tool: 'core.kv.get', start_ms: expect.any(Number), duration_ms: expect.any(Number), outcome: 'UHLP_MCP_UNAUTHORIZED' }]);
    // The call is inside the run, and both inside the execution as the runner timed it.
    expect(timings.tool_calls[0].start_ms).toBeGreaterThanOrEqual(timings.run.start_ms);
    expect(timings.run.start_ms + timings.run.duration_ms).toBeLessThanOrEqual(traced.metrics.execution_time_ms + 0.001);
    const untraced = await send('t-2');
    expect(untraced.metrics.timings).toBeUndefined();
    expect(untraced.metrics.mcp_calls).toEqual([expect.objectContaining({ tool: 'core.kv.get', count: 1 })]);
  });
});

describe('the process around the runner', () => {
  it('finishes what it runs on SIGTERM with --drain-on-sigterm, then exits 0; stops at once without it', async () => {
    const draining = await startPythonRunner(['--definitions', defs, '--drain-on-sigterm']);
    const own = new SandboxClient({ kind: 'unix', socketPath: draining.socketPath });
    try {
      const slow = own.execute(JSON.stringify(request('d-1', { function: 'slow' })), 'd-1', 5000);
      const health = new SandboxClient({ kind: 'unix', socketPath: draining.socketPath });
      // The slow execution must be running before SIGTERM is sent, however loaded the machine.
      await waitFor(async () => (await health.health(1000))?.running === 1, { timeoutMs: 15_000, what: 'the slow execution to run' });
      health.close();
      draining.child.kill('SIGTERM');
      const answer = await slow;
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body.toString()).data).toEqual({ slow: true });
      expect(await draining.exited).toBe(0);
    } finally {
      own.close();
      await draining.stop();
    }
    const stopping = await startPythonRunner(['--definitions', defs]);
    stopping.child.kill('SIGTERM');
    expect(await stopping.exited).toBe(0);
  });

  it('exits when its parent closes its stdin, with --exit-on-stdin-close', async () => {
    const watched = await startPythonRunner(['--definitions', defs, '--exit-on-stdin-close']);
    watched.child.stdin!.end();
    expect(await watched.exited).toBe(0);
  });

  it("keeps a script the core sent with the request when it reads definitions through MCP, and runs it from then on", async () => {
    const cache = mkdtempSync(path.join(os.tmpdir(), 'uhlp-pycache-'));
    const pod = await startPythonRunner(['--definitions', cache, '--definitions-via-mcp']);
    const own = new SandboxClient({ kind: 'unix', socketPath: pod.socketPath });
    try {
      const sent = { ...request('s-1', { script: 'scripts/sent.py' }), definitionFiles: [{ path: 'scripts/sent.py', content: 'def handler(event, ctx):\n    return {"sent": True}\n' }] };
      const first = JSON.parse((await own.execute(JSON.stringify(sent), 's-1', 5000)).body.toString());
      expect(first).toMatchObject({ resultType: 'generic', data: { sent: true }, metrics: { script_load_ms: expect.any(Number) } });
      const again = JSON.parse((await own.execute(JSON.stringify(request('s-2', { script: 'scripts/sent.py' })), 's-2', 5000)).body.toString());
      expect(again.data).toEqual({ sent: true });
      // Kept read-only, with no bytecode beside it.
      expect(readdirSync(path.join(cache, REVISION, 'scripts'))).toEqual(['sent.py']);
      // Neither sent nor reachable through MCP (this execution has no token): a load failure with the reason.
      const missing = JSON.parse((await own.execute(JSON.stringify(request('s-3', { script: 'scripts/other.py' })), 's-3', 5000)).body.toString());
      expect(missing).toMatchObject({ resultType: 'error', data: { code: 'UHLP_SCRIPT_LOAD_FAILED', message: expect.stringMatching(/could not be read from the core: this execution has no MCP token/) } });
    } finally {
      own.close();
      await pod.stop();
    }
  });
});

describe("its definitions cache in its work tree, as in a pod (/work/.definitions)", () => {
  it("reports and removes what a turn planted there or changed, and keeps the scripts it kept itself", async () => {
    const work = mkdtempSync(path.join(os.tmpdir(), 'uhlp-pywork-'));
    for (const top of ['tmp', 'output']) mkdirSync(path.join(work, top));
    const cache = path.join(work, '.definitions');
    const pod = await startPythonRunner(['--definitions', cache, '--definitions-via-mcp', '--work-dir', work]);
    const own = new SandboxClient({ kind: 'unix', socketPath: pod.socketPath });
    const source = [
      'import os',
      'def handler(event, ctx):',
      '    cache = os.path.join(os.path.dirname(os.path.dirname(ctx.workspace.tmpDir)), ".definitions")',
      '    what = event["triggerDetails"]["payload"]["name"]',
      '    if what == "plant":',
      '        with open(os.path.join(cache, "planted.py"), "w") as handle:',
      '            handle.write("for the next session")',
      '    if what == "poison":',
      '        kept = os.path.join(cache, "' + REVISION + '", "scripts", "kept.py")',
      '        os.chmod(kept, 0o644)',
      '        with open(kept, "a") as handle:',
      '            handle.write("# poisoned")',
      '    return {"did": what}',
      '',
    ].join('\n');
    const turn = async (id: string, name: string, files?: unknown) => {
      const body = { ...request(id, { script: 'scripts/kept.py' }, { sessionId: 's-cache', workspace: { tmpDir: 'tmp/s-cache', outputDir: 'output/s-cache' } }), reportWrites: true, ...(files ? { definitionFiles: files } : {}) };
      body.requestData = { source: 'trigger', triggerDetails: { sourceAppId: 'test', triggerEvent: 'unit', payload: { name } } };
      const answer = JSON.parse((await own.execute(JSON.stringify(body), id, 5000)).body.toString()) as Record<string, any>;
      expect(validateExecuteResponse(answer)).toBeUndefined();
      return answer;
    };
    try {
      // The script the core sent, kept in the cache by the runner: not a turn's write.
      const first = await turn('c-1', 'nothing', [{ path: 'scripts/kept.py', content: source }]);
      expect(first.writes).toEqual({ realized: [], emptied: true });
      const planted = await turn('c-2', 'plant');
      expect(planted.writes.realized.map((w: { path: string }) => w.path)).toEqual(['.definitions/planted.py']);
      expect(readdirSync(cache)).toEqual([REVISION]);
      const poisoned = await turn('c-3', 'poison');
      expect(poisoned.writes.realized.map((w: { path: string }) => w.path)).toEqual([`.definitions/${REVISION}/scripts/kept.py`]);
      // Removed, and with it the directories that held nothing else of the runner's.
      expect(readdirSync(cache)).toEqual([]);
    } finally {
      own.close();
      await pod.stop();
    }
  });
});

describe('the sandboxes\' seccomp policy, loaded on itself (--seccomp-self, as in a pod)', () => {
  it('refuses to start, exit 70 with the reason on stderr, when the filter file is missing or not a BPF program', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-pyseccomp-'));
    const cases: Array<[string, Buffer | undefined, RegExp]> = [
      ['missing.bpf', undefined, /No such file or directory/],
      ['empty.bpf', Buffer.alloc(0), /0 bytes is not a BPF program/],
      ['torn.bpf', seccompFilter().subarray(0, 12), /12 bytes is not a BPF program/],
      // Whole instructions, but no program the kernel takes (it ends on no return).
      ['garbage.bpf', Buffer.alloc(64, 0xff), /PR_SET_SECCOMP: Invalid argument/],
    ];
    const runnerDir = pythonRunnerDir();
    for (const [name, content, reason] of cases) {
      const file = path.join(dir, name);
      if (content !== undefined) writeFileSync(file, content);
      const started = spawnSync(DEFAULT_PYTHON_PATH, [...PYTHON_FLAGS, path.join(runnerDir, 'main.py'), '--listen', `unix:${path.join(dir, 'runner.sock')}`, '--definitions', defs, '--seccomp-self', file], {
        encoding: 'utf8',
        timeout: 10_000,
      });
      expect(started.status, name).toBe(70);
      expect(started.stderr, name).toMatch(/python-runner: FATAL: cannot install the seccomp filter/);
      expect(started.stderr, name).toMatch(reason);
      expect(started.stdout, name).not.toMatch(/"ready"/);
    }
  });

  it('serves under the policy: a script starts no process, but threads and its files work', async () => {
    const filter = path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-pyseccomp-')), 'seccomp-filter.bpf');
    writeFileSync(filter, seccompFilter());
    const held = await startPythonRunner(['--definitions', defs, '--work-dir', work, '--seccomp-self', filter]);
    const own = new SandboxClient({ kind: 'unix', socketPath: held.socketPath });
    try {
      const answer = JSON.parse((await own.execute(JSON.stringify(request('p-1', { function: 'spawns' })), 'p-1', 5000)).body.toString());
      expect(answer).toMatchObject({ resultType: 'generic', data: { fork: 'Operation not permitted', subprocess: 'Operation not permitted', thread: ['thread'], wrote: true } });
    } finally {
      own.close();
      await held.stop();
    }
  });
});

/** One raw exchange on a new connection, as the bytes of the answer's head. */
function rawText(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(runner.socketPath);
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n\r\n')) {
        socket.destroy();
        resolve(received);
      }
    });
    socket.on('error', reject);
    socket.write(text);
  });
}

/** One raw exchange on a new connection. */
function raw(text: string): Promise<ParsedResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(runner.socketPath);
    const parser = new Http1ResponseParser();
    socket.on('data', (chunk: Buffer) => {
      const answer = parser.push(chunk);
      if (answer) {
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('error', reject);
    socket.write(text);
  });
}
