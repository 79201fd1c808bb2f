/**
 * The escape suite: the same hostile scripts (test/fixtures/escape, and in Python
 * test/fixtures/escape-python for `runner: python` pools) through a
 * real core on each driver. Each attempt to leave the sandbox — a self-granted
 * capability through a state diff, host files, other processes' /proc, TCP and
 * Unix-socket dials to the core, process creation, the spine, a 300 MB answer,
 * writes outside the turn's directories, a file left anywhere writable for the
 * next session — must be refused with a stable code, and the core must keep
 * serving. A sandbox that fills its memory must be counted as a heap limit. The
 * table of outcomes is printed at the end.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFixture, startUhlpDev, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';

export interface EscapeSuiteOptions {
  readonly driver: 'process' | 'docker';
  /** Whose hostile scripts: the jit-runner's (JavaScript) or the python runner's. @defaultValue jit */
  readonly runner?: 'jit' | 'python';
  /** Called before the core starts (the Docker engine check). */
  readonly before?: () => Promise<void>;
  readonly startTimeoutMs?: number;
}

/** What the hostile script needs to know of the host, to aim at it. */
interface HostTargets {
  dataDir: string;
  definitionsDir: string;
  corePid: number;
  corePort: number;
  hostAddress: string;
  spineSocket: string;
  spineSecret: string;
  mcpSocket: string;
  ledger: string;
  otherRevision: string;
}

type Row = { attempt: string; target: string; outcome: string };

/**
 * What the seccomp policy answers each of hostile.py's process creations, on every
 * driver: bubblewrap's filter, Docker's profile and, in a pod, the filter the python
 * runner loads on itself (test/cluster/escape-pod-python.test.ts) refuse them alike.
 */
export const PYTHON_SPAWN_REFUSALS: Readonly<Record<string, string>> = {
  'subprocess.run': 'EPERM',
  'subprocess /bin/sh': 'EPERM',
  'os.fork': 'EPERM',
  'os.posix_spawn': 'EPERM',
  'ctypes libc fork()': 'EPERM',
  'ctypes clone syscall': 'EPERM',
  multiprocessing: 'EPERM',
};

/** Outcomes that mean the attempt got through. */
const GOT_THROUGH = /^(ok|200)\b/;

export function describeEscapes(options: EscapeSuiteOptions): void {
  const python = options.runner === 'python';
  const label = `${options.driver} driver${python ? ', python runner' : ''}`;
  describe(`escape attempts on the ${label}`, () => {
    let core: UhlpProcess;
    let defs: string;
    let host: HostTargets;
    const rows: Row[] = [];

    beforeAll(async () => {
      await options.before?.();
      defs = copyFixture(python ? 'escape-python' : 'escape');
      const hostile = python ? 'hostile.py' : 'hostile.mjs';
      cpSync(path.join(defs, 'apps/bare/scripts', hostile), path.join(defs, 'apps/granted/scripts', hostile));
      core = await startUhlpDev(defs, ['--driver', options.driver], options.startTimeoutMs ?? 60_000);
      const revisions = path.join(core.dataDir, 'app-revisions', 'other');
      host = {
        dataDir: core.dataDir,
        definitionsDir: defs,
        corePid: core.child.pid!,
        corePort: Number(new URL(core.url).port),
        hostAddress: hostAddress(),
        spineSocket: path.join(core.dataDir, 'core.sock'),
        spineSecret: path.join(core.dataDir, 'spine.secret'),
        mcpSocket: path.join(core.dataDir, 'mcp.sock'),
        ledger: path.join(core.dataDir, 'planes'),
        otherRevision: path.join(revisions, readdirSync(revisions)[0]!, 'scripts/secret.mjs'),
      };
      expect(existsSync(host.spineSecret)).toBe(true);
    }, (options.startTimeoutMs ?? 60_000) + 30_000);

    afterAll(async () => {
      await core?.stop();
      const width = Math.max(...rows.map((r) => r.attempt.length + r.target.length + 3));
      process.stdout.write(
        `\n[escape suite, ${label}]\n${rows.map((r) => `  ${`${r.attempt} | ${r.target}`.padEnd(width)} -> ${r.outcome}`).join('\n')}\n`,
      );
    });

    async function post(app: string, kind: string, headers: Record<string, string> = {}): Promise<{ status: number; json: any; headers: Headers }> {
      const response = await fetch(`${core.url}/${app}/attempt`, { method: 'POST', headers, body: JSON.stringify({ kind, host }) });
      return { status: response.status, json: await response.json(), headers: response.headers };
    }

    /** Runs an attempt script and checks that every one of its tries was refused with a code. */
    async function attempt(app: string, kind: string, allowed: readonly string[] = []): Promise<Record<string, string>> {
      const { status, json } = await post(app, kind);
      expect(status, JSON.stringify(json)).toBe(200);
      const results = json.results as Record<string, string>;
      for (const [target, outcome] of Object.entries(results)) {
        rows.push({ attempt: `${app}: ${kind}`, target, outcome });
        if (allowed.includes(target)) continue;
        expect(outcome, `${kind}: ${target}`).not.toMatch(GOT_THROUGH);
        expect(outcome, `${kind}: ${target} has a stable code`).toMatch(/^[A-Z0-9_]+|^\d{3} UHLP_[A-Z_]+/);
      }
      return results;
    }

    async function expectServing(): Promise<void> {
      expect((await fetch(`${core.url}/readyz`)).status).toBe(200);
      expect((await fetch(`${core.url}/bare/hello`)).status).toBe(200);
    }

    it('grants itself nothing through state diffs, with or without the state capability, and the refusals reach the ledger', async () => {
      const headBefore = gitHead(defs);
      const bare = await attempt('bare', 'self-grant', ['read app.yaml']);
      expect(bare['commit app.yaml']).toBe('UHLP_CAPABILITY_DENIED absent');
      expect(bare['shell id']).toBe('UHLP_CAPABILITY_DENIED');
      const { json, headers } = await post('granted', 'self-grant', { 'X-UHLP-Session': 'new' });
      const granted = json.results as Record<string, string>;
      for (const [target, outcome] of Object.entries(granted)) rows.push({ attempt: 'granted (state: write **): self-grant', target, outcome });
      for (const target of ['commit app.yaml', 'commit APP.YAML', 'delete app.yaml', 'diff app.yaml', 'commit .gitattributes']) {
        expect(granted[target], target).toBe('UHLP_CAPABILITY_DENIED protected');
      }
      expect(granted['commit ../other/app.yaml']).toMatch(/^UHLP_DEFINITION_PATH_REFUSED/);
      expect(granted['shell id']).toBe('UHLP_CAPABILITY_DENIED');
      expect(gitHead(defs)).toBe(headBefore);

      // Every refusal is a capability violation in the turn's evidence entry.
      const sid = headers.get('x-uhlp-session-id')!;
      const evidence = await ledgerEntry(core.dataDir, sid, 'evidence');
      const refused = (evidence.capability_violations as Array<{ capability: string; operation: string }>).map((v) => `${v.capability} ${v.operation}`);
      expect(refused).toContain('capabilities.state.protected core.state.applyStateDiff app.yaml');
      expect(refused).toContain('capabilities.shell.absent core.linux.executeCommand id');
      await expectServing();
    });

    it('reads no host file: not the spine secret, not the ledgers, not another app, not the definitions repository', async () => {
      await attempt('bare', 'read-host');
      await expectServing();
    });

    it("reads no other process's /proc entries and sees no host process", async () => {
      await attempt('bare', 'read-proc');
    });

    it("reaches no TCP port: not the core's, not the host's, not the network", async () => {
      await attempt('bare', 'dial-tcp');
    });

    it("reaches no socket of the core but its MCP endpoint, and that one serves /mcp only", async () => {
      const results = await attempt('bare', 'dial-unix');
      expect(results['mcp socket GET /metrics']).toBe('404 UHLP_ROUTE_NOT_FOUND');
      expect(results['mcp socket GET /_uhlp/mcp-token/bare']).toBe('404 UHLP_ROUTE_NOT_FOUND');
      expect(results['mcp socket GET /other/hello']).toBe('404 UHLP_ROUTE_NOT_FOUND');
      // The spine never heard from it: the core still serves, and exits only when asked by its owner.
      await expectServing();
    });

    it('starts no process and no worker', async () => {
      const results = await attempt('bare', 'spawn');
      if (python) expect(results).toEqual(PYTHON_SPAWN_REFUSALS);
      await expectServing();
    });

    if (python) {
      it('is PID 1 of its own namespace, and sees no process but itself', async () => {
        // No permission model keeps a Python script out of /proc: what is there is its own process alone.
        const response = await fetch(`${core.url}/bare/pid-one`);
        const seen = (await response.json()) as { pid: number; processes: string[] };
        rows.push({ attempt: 'bare: processes in /proc', target: 'its namespace', outcome: `pid ${seen.pid}, sees ${seen.processes.join(' ')}` });
        expect(seen).toEqual({ pid: 1, processes: ['1'] });
      });
    }

    it('writes nowhere outside its session directories', async () => {
      await attempt('bare', 'write-outside');
      const stray = await fetch(`${core.url}/bare/stray`);
      const body = (await stray.json()) as { code: string; details: { undeclared: string[] } };
      rows.push({ attempt: 'bare: write in the tree, outside the turn', target: 'tmp/stray.txt', outcome: `${stray.status} ${body.code}` });
      expect(stray.status).toBe(502);
      expect(body).toMatchObject({ code: 'UHLP_WRITE_SURFACE_MISMATCH', details: { undeclared: ['tmp/stray.txt'] } });
      await expectServing();
    });

    it('leaves nothing anywhere it can write for the next session on its sandbox', async () => {
      // scatter writes a file in every directory it can list (and, in Python, a System V segment and a message queue).
      const scatter = await fetch(`${core.url}/bare/scatter`, { headers: { 'X-UHLP-Session': 'new' } });
      const refused = (await scatter.json()) as { code: string; details: { undeclared: string[] } };
      rows.push({ attempt: 'bare: a file in every writable place', target: 'the turn', outcome: `${scatter.status} ${refused.code} ${refused.details?.undeclared?.join(' ')}` });
      expect(scatter.status).toBe(502);
      expect(refused.code).toBe('UHLP_WRITE_SURFACE_MISMATCH');
      // The tree's root is walked as its session directories are; a python runner's socket directory too (no permission model refuses it).
      expect(refused.details.undeclared).toContain('uhlp-left-behind');
      if (python) expect(refused.details.undeclared).toContain('/run/uhlp/uhlp-left-behind');
      // A new session, on the same sandbox (its pool has one), finds nothing of it.
      const gather = await fetch(`${core.url}/bare/gather`, { headers: { 'X-UHLP-Session': 'new' } });
      const seen = (await gather.json()) as { found: string[]; searched: number; same_runner: boolean };
      rows.push({ attempt: 'bare: the next session looks for it', target: `${seen.searched} directories`, outcome: seen.found?.length ? `found ${seen.found.join(' ')}` : 'nothing' });
      expect(gather.status).toBe(200);
      expect(seen.same_runner).toBe(true);
      expect(seen.found).toEqual([]);
      await expectServing();
    });

    it('counts a sandbox that fills its memory as a heap limit, not a crash', async () => {
      const response = await fetch(`${core.url}/bare/hog`);
      rows.push({ attempt: 'bare: fills its memory', target: 'the runner', outcome: String(response.status) });
      expect(response.status).toBe(502);
      await waitFor(async () => (await destroyedSandboxes(core.url, 'hog'))['heap-limit'] === 1, { timeoutMs: 30_000, intervalMs: 100, what: 'the hog sandbox counted as heap-limit' });
      expect(await destroyedSandboxes(core.url, 'hog')).toEqual({ 'heap-limit': 1 });
      await expectServing();
    });

    if (python) {
      it('bounds its memory whatever it allocates with: 512 MiB of shared memory in a 128 MiB pool is refused', async () => {
        const response = await fetch(`${core.url}/bare/shared-hog`);
        const body = (await response.json()) as Record<string, unknown>;
        rows.push({ attempt: 'bare: mmap(-1, 512 MiB), MAP_SHARED', target: '128 MiB pool', outcome: JSON.stringify(body) });
        expect(response.status).toBe(200);
        expect(body).toEqual({ refused: 'ENOMEM' });
      });

      it('answers a result it cannot encode (a lone surrogate) with UHLP_SCRIPT_BAD_RESULT, and its runner keeps serving', async () => {
        const gather = async (): Promise<{ same_runner: boolean }> => (await (await fetch(`${core.url}/bare/gather`)).json()) as { same_runner: boolean };
        const before = await gather();
        const response = await fetch(`${core.url}/bare/surrogate`);
        const body = (await response.json()) as { code: string };
        rows.push({ attempt: 'bare: a lone surrogate in its result', target: 'the runner', outcome: `${response.status} ${body.code}` });
        expect(response.status).toBe(500);
        expect(body.code).toBe('UHLP_SCRIPT_BAD_RESULT');
        // The same runner (its pool has one sandbox, and it remembers scatter) answers the next request.
        expect(await gather()).toMatchObject({ same_runner: before.same_runner });
        expect(await destroyedSandboxes(core.url, 'one')).toEqual({});
      });
    }

    it('makes no link for the core to follow out of its tree', async () => {
      // The core's walk never follows a link either (write-surface.test.ts makes them, as a sandbox without these fences could).
      await attempt('bare', 'links');
      await expectServing();
    });

    it("gives each turn its own tmp and output directories, TMPDIR pointing at tmp", async () => {
      const response = await fetch(`${core.url}/bare/hello`);
      const body = (await response.json()) as { tmpdir: string; workspace: { tmpDir: string; outputDir: string } };
      expect(body.workspace.tmpDir).toMatch(/\/tmp\/SES-[0-9TZ]+-[0-9A-Z]{20}$/);
      expect(body.workspace.outputDir).toBe(body.workspace.tmpDir.replace('/tmp/', '/output/'));
      expect(body.tmpdir).toBe(body.workspace.tmpDir);
    });

    it('keeps the declared outputs of a turn whose writes match, for its session to fetch, and records the writes in the ledger', async () => {
      const response = await fetch(`${core.url}/bare/report`, { headers: { 'X-UHLP-Session': 'new' } });
      expect(response.status).toBe(200);
      const sid = response.headers.get('x-uhlp-session-id')!;
      const fetched = await fetch(`${core.url}/_uhlp/sessions/${sid}/outputs/report.json`);
      expect(fetched.status).toBe(200);
      expect(await fetched.json()).toEqual({ total: 42 });
      // Scratch is not kept; an unknown session or path is 404, a path out of the outputs is refused.
      expect((await fetch(`${core.url}/_uhlp/sessions/${sid}/outputs/scratch.txt`)).status).toBe(404);
      expect((await fetch(`${core.url}/_uhlp/sessions/SES-20261122T000000000Z-ABCDEFGHJKMNPQRSTVWX/outputs/report.json`)).status).toBe(404);
      expect((await fetch(`${core.url}/_uhlp/sessions/${sid}/outputs/..%2F..%2Fspine.secret`)).status).toBe(400);
      const evidence = await ledgerEntry(core.dataDir, sid, 'evidence');
      expect(evidence.declared_writes).toEqual([
        { path: 'output/report.json', role: 'report' },
        { path: 'tmp/**', role: 'scratch' },
      ]);
      expect((evidence.realized_writes as Array<{ path: string }>).map((w) => w.path).sort()).toEqual(['output/report.json', 'tmp/deep/more.txt', 'tmp/scratch.txt']);
    });

    it('refuses a turn that writes what it did not declare, or not what it declared, and publishes nothing', async () => {
      const over = await fetch(`${core.url}/bare/overreach`, { headers: { 'X-UHLP-Session': 'new' } });
      expect(over.status).toBe(502);
      expect(await over.json()).toMatchObject({ code: 'UHLP_WRITE_SURFACE_MISMATCH', details: { undeclared: ['output/extra.txt'], missing: [] } });
      const sid = over.headers.get('x-uhlp-session-id')!;
      expect((await fetch(`${core.url}/_uhlp/sessions/${sid}/outputs/report.json`)).status).toBe(404);
      const evidence = await ledgerEntry(core.dataDir, sid, 'evidence');
      expect(evidence.capability_violations).toEqual([expect.objectContaining({ operation: 'write output/extra.txt', capability: 'declared_outputs' })]);

      const lazy = await fetch(`${core.url}/bare/lazy`);
      expect(lazy.status).toBe(502);
      expect(await lazy.json()).toMatchObject({ code: 'UHLP_WRITE_SURFACE_MISMATCH', details: { undeclared: [], missing: ['output/report.json'] } });
    });

    it("takes declarations from the request too, and refuses a bad declaration with the header's name", async () => {
      const declared = await fetch(`${core.url}/bare/hello`, { headers: { 'X-UHLP-Declared-Outputs': JSON.stringify([{ path: 'output/summary.md', role: 'summary' }]) } });
      expect(declared.status).toBe(502);
      expect(await declared.json()).toMatchObject({ code: 'UHLP_WRITE_SURFACE_MISMATCH', details: { missing: ['output/summary.md'] } });
      for (const bad of ['not json', '[{"path":"/etc/passwd","role":"x"}]', '[{"path":"output/../../x","role":"x"}]', '[{"path":"output/a"}]']) {
        const response = await fetch(`${core.url}/bare/hello`, { headers: { 'X-UHLP-Declared-Outputs': bad } });
        expect(response.status, bad).toBe(400);
        expect(await response.json()).toMatchObject({ code: 'UHLP_DECLARED_OUTPUTS_INVALID', details: { header: 'x-uhlp-declared-outputs' } });
      }
    });

    it('answers 502 for a 300 MB answer and keeps serving', async () => {
      const response = await fetch(`${core.url}/bare/huge`);
      const body = (await response.json()) as { code: string };
      rows.push({ attempt: 'bare: answer of 300 MB', target: 'the core', outcome: `${response.status} ${body.code}` });
      expect(response.status).toBe(502);
      expect(body.code).toBe('UHLP_SANDBOX_RESPONSE_TOO_LARGE');
      await expectServing();
    });
  });
}

/** The first IPv4 address of this machine that is not loopback: the host as a container or namespace would dial it. */
function hostAddress(): string {
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const address of addresses ?? []) if (address.family === 'IPv4' && !address.internal) return address.address;
  }
  return '127.0.0.2';
}

/** `uhlp_sandbox_destroyed_total` of a pool of the bare app, by cause (causes never counted absent). */
async function destroyedSandboxes(url: string, pool: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const match = /^uhlp_sandbox_destroyed_total\{(.*)\} (\d+)/.exec(line);
    if (!match || !match[1]!.includes('app="bare"') || !match[1]!.includes(`pool="${pool}"`)) continue;
    const cause = /cause="([^"]+)"/.exec(match[1]!)?.[1];
    if (cause !== undefined && Number(match[2]) > 0) counts[cause] = Number(match[2]);
  }
  return counts;
}

function gitHead(dir: string): string {
  return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim();
}

/** The last entry of a session's ledger, once the ledger thread wrote it. */
async function ledgerEntry(dataDir: string, sid: string, kind: 'exec' | 'evidence'): Promise<Record<string, unknown>> {
  const file = path.join(dataDir, 'planes/development/sessions', sid, 'ledger', `${kind}.jsonl`);
  for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
    const lines = existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
    const last = lines.length > 0 ? (JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>) : undefined;
    if (last?.turn_number === 1) return last;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no ${kind} entry for ${sid}`);
}
