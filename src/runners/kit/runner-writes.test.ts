/**
 * The runner's walk of its work tree (pods: the core cannot see `/work`): asked
 * with `reportWrites`, the runner makes the turn's directories, runs the
 * execution, walks the tree by the core's rules (src/shared/work-tree-walk.ts),
 * answers what it found in `writes`, and empties the tree for the next turn.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { validateExecuteResponse, type ExecuteRequest, type ExecuteResponse } from '../../contract/execute-contract.js';
import type { Executor } from './executor.js';
import { createRunnerServer, type RunnerServer } from './runner-server.js';
import { RunnerFiles } from '../../shared/work-tree-walk.js';

const SID = 's-0123456789abcdef';
let runner: RunnerServer;
let socketPath: string;
let work: string;
/** What the next execution does in the tree; the executor answers once it is done. */
let writes: (root: string) => void = () => undefined;
/** The scripts the runner kept in its definitions cache (a pod's /work/.definitions). */
let kept: RunnerFiles;

beforeEach(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-rw-'));
  socketPath = path.join(dir, 'r.sock');
  work = path.join(dir, 'work');
  mkdirSync(path.join(work, 'tmp'), { recursive: true });
  mkdirSync(path.join(work, 'output'), { recursive: true });
  mkdirSync(path.join(work, '.definitions', 'rev'), { recursive: true });
  writeFileSync(path.join(work, '.definitions', 'rev', 'a.js'), 'export default () => 1;');
  kept = new RunnerFiles('.definitions');
  kept.record(path.join(work, '.definitions', 'rev', 'a.js'));
  const executor: Executor = async () => {
    writes(work);
    return { resultType: 'generic', data: { ok: true } };
  };
  runner = createRunnerServer({ executor, workTree: { hostDir: work, runnerFiles: kept } });
  await new Promise<void>((resolve) => runner.server.listen(socketPath, resolve));
});
afterEach(async () => {
  writes = () => undefined;
  await new Promise<void>((resolve) => runner.server.close(() => resolve()));
});

function request(id: string, extra: Record<string, unknown>, sessionId: string = SID): ExecuteRequest {
  return {
    requestId: id,
    requestData: { source: 'internal' },
    context: {
      appId: 'a',
      componentId: 'c',
      mcp_endpoint: 'http://127.0.0.1:1/mcp',
      stateConfig: { type: 'none' },
      sessionId,
      workspace: { tmpDir: `tmp/${sessionId}`, outputDir: `output/${sessionId}` },
      configuration: {},
      applicationInfo: { deploymentMode: 'development' },
    },
    ...extra,
  } as ExecuteRequest;
}

function execute(body: ExecuteRequest): Promise<ExecuteResponse> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const sent = http.request(
      { socketPath, agent: false, method: 'POST', path: '/execute', headers: { 'content-type': 'application/json', 'x-request-id': body.requestId, 'content-length': Buffer.byteLength(text) } },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          const value = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ExecuteResponse;
          // Every answer holds to the contract the core checks it against.
          expect(validateExecuteResponse(value)).toBeUndefined();
          resolve(value);
        });
      },
    );
    sent.on('error', reject);
    sent.end(text);
  });
}

describe('the runner reports its work tree when asked', () => {
  it('sends no report unless asked, and walks nothing then', async () => {
    writes = (root) => writeFileSync(path.join(root, 'stray.txt'), 'x');
    const answer = await execute(request('r1', {}));
    expect(answer.writes).toBeUndefined();
    // Not its tree to clean: the core walks it where it asks for no report.
    expect(existsSync(path.join(work, 'stray.txt'))).toBe(true);
  });

  it('makes the turn directories before the execution and reports a turn that wrote nothing as nothing', async () => {
    let seen: string[] = [];
    writes = (root) => (seen = [readdirSync(path.join(root, 'tmp')), readdirSync(path.join(root, 'output'))].flat());
    const answer = await execute(request('r2', { reportWrites: true }));
    expect(seen).toEqual([SID, SID]);
    expect(answer.writes).toEqual({ realized: [], emptied: true });
  });

  it('reports the turn files with their hashes, every stray and every link, and empties the tree', async () => {
    writes = (root) => {
      writeFileSync(path.join(root, 'output', SID, 'report.json'), '{}');
      writeFileSync(path.join(root, 'tmp', SID, 'scratch'), 'abc');
      writeFileSync(path.join(root, 'beside.txt'), 'left for the next session');
      mkdirSync(path.join(root, 'tmp', 'other-session'));
      writeFileSync(path.join(root, 'tmp', 'other-session', 'planted'), 'p');
      symlinkSync('/etc/passwd', path.join(root, 'output', SID, 'link'));
    };
    const answer = await execute(request('r3', { reportWrites: true }));
    const realized = answer.writes!.realized;
    expect(realized.map((w) => `${w.path} ${w.kind} ${w.size}`).sort()).toEqual([
      'beside.txt file 25',
      // The turn's files as its declarations name them: under `output/` and `tmp/`, without the session's directory.
      'output/link symlink 0',
      'output/report.json file 2',
      'tmp/other-session/planted file 1',
      'tmp/scratch file 3',
    ]);
    expect(realized.find((w) => w.path === 'tmp/scratch')!.hash).toBe('sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(answer.writes!.emptied).toBe(true);
    // Emptied for the next turn: the session's directories kept, empty; the runner's own cache untouched.
    expect(readdirSync(work).sort()).toEqual(['.definitions', 'output', 'tmp']);
    expect(readdirSync(path.join(work, 'tmp'))).toEqual([SID]);
    expect(readdirSync(path.join(work, 'tmp', SID))).toEqual([]);
    expect(readdirSync(path.join(work, 'output', SID))).toEqual([]);
    expect(existsSync(path.join(work, '.definitions', 'rev', 'a.js'))).toBe(true);
  });

  it('reports a top directory replaced by a file, and makes it again', async () => {
    writes = (root) => {
      // rm -rf output; echo > output
      rmSync(path.join(root, 'output'), { recursive: true });
      writeFileSync(path.join(root, 'output'), 'not a directory');
    };
    const answer = await execute(request('r4', { reportWrites: true }));
    expect(answer.writes!.realized.map((w) => w.path).sort()).toEqual(['output']);
    expect(readdirSync(work).sort()).toEqual(['.definitions', 'output', 'tmp']);
  });

  it("reports what a turn put in the runner's definitions cache, or changed there, and removes it; the runner's own scripts stay", async () => {
    writes = (root) => {
      writeFileSync(path.join(root, '.definitions', 'rev', 'planted.js'), 'export default () => "for the next session";');
      mkdirSync(path.join(root, '.definitions', 'name-is-a-message'));
    };
    const planted = await execute(request('r5', { reportWrites: true }));
    expect(planted.writes!.realized.map((w) => w.path)).toEqual(['.definitions/rev/planted.js']);
    expect(readdirSync(path.join(work, '.definitions')).sort()).toEqual(['rev']);
    expect(readdirSync(path.join(work, '.definitions', 'rev'))).toEqual(['a.js']);

    // A kept script rewritten in place (another component's, for the next session): its stamp moved.
    writes = (root) => {
      const file = path.join(root, '.definitions', 'rev', 'a.js');
      chmodSync(file, 0o644);
      writeFileSync(file, 'export default () => "poisoned";');
    };
    const poisoned = await execute(request('r6', { reportWrites: true }));
    expect(poisoned.writes!.realized.map((w) => w.path)).toEqual(['.definitions/rev/a.js']);
    expect(existsSync(path.join(work, '.definitions', 'rev', 'a.js'))).toBe(false);
  });

  it('walks nothing for a session id that is not one path segment', async () => {
    for (const sessionId of ['..', '../x', 'a/b', '.']) {
      const answer = await execute(request(`bad-${sessionId.length}`, { reportWrites: true }, sessionId));
      // No report: the core fails the turn (UHLP_WRITE_SURFACE_UNREPORTED).
      expect(answer.writes).toBeUndefined();
    }
    expect(readdirSync(work).sort()).toEqual(['.definitions', 'output', 'tmp']);
  });
});
