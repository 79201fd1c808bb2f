/**
 * The command a process sandbox starts per runner: the jit-runner gets its app's
 * revisions (mounted and readable), the llm-orchestrator does not; each gets
 * only its own staged files, behind the same fences.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { prepareProcessSandbox, type RunnerLaunch } from '../../src/sandbox/process-sandbox.js';
import { DEFAULT_PYTHON_PATH } from '../../src/images/python-runtime.js';
import { seccompFilter } from '../../src/sandbox/seccomp-filter.js';
import { silentLogger } from '../../src/logger.js';
import { ProcessDriver } from '../../src/sandbox/process-driver.js';
import { makeSuiteDefinitions, suitePool } from './driver-suite.js';

const launch = (runner: RunnerLaunch['runner']): RunnerLaunch => ({
  runner,
  socketDir: '/host/socket',
  definitionsDir: '/host/definitions',
  workDir: '/host/work',
  mcpSocket: '/host/mcp.sock',
  memoryMb: 64,
  concurrency: 1,
  niceness: 10,
});

describe('process sandbox commands per runner', () => {
  it('with bubblewrap: the same fences for both, the definitions mount for the jit-runner only', async () => {
    const sandbox = await prepareProcessSandbox({ stateDir: mkdtempSync(path.join(os.tmpdir(), 'uhlp-psr-')) });
    expect(sandbox.isolation).toBe('namespaces');
    const jit = sandbox.launch(launch('jit')).args;
    const llm = sandbox.launch(launch('llm')).args;
    for (const args of [jit, llm]) {
      expect(args).toEqual(expect.arrayContaining(['--unshare-all', '--die-with-parent', '--cap-drop', 'ALL', '--seccomp', '3', '--clearenv']));
      expect(args).toContain('--permission');
      expect(args).toContain('--allow-fs-write=/work');
      expect(args.join(' ')).toContain('--bind /host/mcp.sock /run/uhlp-core/mcp.sock');
    }
    expect(jit.join(' ')).toContain('--ro-bind /host/definitions /definitions');
    expect(jit).toEqual(expect.arrayContaining(['--allow-fs-read=/definitions', '--definitions', '/app/dist/runners/jit/main.js']));
    expect(llm.join(' ')).not.toContain('/definitions');
    expect(llm).toContain('/app/dist/runners/llm-orchestrator/main.js');
    // Each runner's own staged directory at /app, not the other's.
    const appDir = (args: string[]): string => args[args.indexOf('/app') - 1]!;
    expect(path.basename(appDir(jit))).toMatch(/^jit-runner-[0-9a-f]{16}$/);
    expect(path.basename(appDir(llm))).toMatch(/^llm-orchestrator-[0-9a-f]{16}$/);
  });

  it('allows native addons to the csjs runner only, which mounts no definitions', async () => {
    const sandbox = await prepareProcessSandbox({ stateDir: mkdtempSync(path.join(os.tmpdir(), 'uhlp-psr-')) });
    const csjs = sandbox.launch(launch('csjs')).args;
    expect(csjs).toEqual(expect.arrayContaining(['--allow-addons', '/app/dist/runners/csjs/main.js', '--seccomp', '3']));
    expect(csjs.join(' ')).not.toContain('/definitions');
    expect(sandbox.launch(launch('jit')).args).not.toContain('--allow-addons');
    expect(sandbox.launch(launch('llm')).args).not.toContain('--allow-addons');
    // Only the addon's runtime files are staged, not its sources, build tree or install-time helpers.
    const appDir = csjs[csjs.indexOf('/app') - 1]!;
    const { readdirSync } = await import('node:fs');
    const staged = readdirSync(path.join(appDir, 'node_modules', 'isolated-vm'), { recursive: true }).map(String);
    expect(staged.filter((name) => !name.endsWith('.node')).sort()).toEqual(['LICENSE', 'isolated-vm.js', 'package.json', 'prebuilds', `prebuilds/${process.platform}-${process.arch}`]);
    const addons = staged.filter((name) => name.endsWith('.node'));
    expect(addons).toContain(`prebuilds/${process.platform}-${process.arch}/isolated-vm.abi${process.versions.modules}.glibc.node`);
    expect(addons.every((name) => /\.glibc\.node$/.test(name))).toBe(true);
    expect(readdirSync(path.join(appDir, 'node_modules')).sort()).toEqual(['@sinclair', 'isolated-vm', 'node-gyp-build']);
  });

  it('unisolated: the permission model reads no definitions for the llm-orchestrator', async () => {
    const sandbox = await prepareProcessSandbox({ stateDir: mkdtempSync(path.join(os.tmpdir(), 'uhlp-psr-')), prefer: 'none', allowUnisolated: true });
    const llm = sandbox.launch(launch('llm')).args;
    expect(llm.join(' ')).not.toContain('/host/definitions');
    expect(llm.some((arg) => arg.endsWith(path.join('dist', 'runners', 'llm-orchestrator', 'main.js')))).toBe(true);
    expect(sandbox.launch(launch('jit')).args).toEqual(expect.arrayContaining(['--allow-fs-read=/host/definitions', '--definitions', '/host/definitions']));
  });

  it('runs the python runner on the host\'s CPython behind the same namespaces, as PID 1, with no Node fence and its own memory cap', async () => {
    const sandbox = await prepareProcessSandbox({ stateDir: mkdtempSync(path.join(os.tmpdir(), 'uhlp-psr-')) });
    const python = sandbox.launch(launch('python')).args;
    expect(python).toEqual(expect.arrayContaining(['--unshare-all', '--die-with-parent', '--cap-drop', 'ALL', '--seccomp', '3', '--clearenv', '--as-pid-1']));
    const text = python.join(' ');
    expect(text).toMatch(/--ro-bind \S+python3\.\d+ \/usr\/bin\/python3 /);
    expect(text).toMatch(/--ro-bind (\/usr\/lib\/python3\.\d+) \1 /);
    expect(text).toContain('--ro-bind /host/definitions /definitions');
    // The root takes no write once built, for every runner; the command is CPython's, with no Node flag.
    expect(text).toContain('--remount-ro / --chdir /work --seccomp 3 -- /usr/bin/python3 -B -E -S -X utf8 /app/dist/runners/python/main.py --listen unix:/run/uhlp/runner.sock');
    expect(sandbox.launch(launch('jit')).args.join(' ')).toContain('--remount-ro / --chdir /work --seccomp 3 -- /usr/local/bin/node');
    expect(python).not.toContain('--permission');
    expect(text).toMatch(/--definitions \/definitions .* --memory-mb 64$/);
    const appDir = python[python.indexOf('/app') - 1]!;
    expect(path.basename(appDir)).toMatch(/^python-runner-[0-9a-f]{16}$/);
    const { readdirSync } = await import('node:fs');
    expect(readdirSync(appDir, { recursive: true }).map(String).sort()).toEqual(
      [
        'dist',
        'dist/runners',
        'dist/runners/python',
        ...['execute-contract.json', 'execute_contract.py', 'main.py', 'python_executor.py', 'runner_exit.py', 'runner_server.py', 'script_loader.py', 'script_result.py', 'seccomp_self.py', 'uhlp_tools.py', 'unix_http.py', 'work_tree_walk.py'].map((name) => `dist/runners/python/${name}`),
        'seccomp-filter.bpf',
      ],
    );
  });

  it('unisolated: runs the python runner on the host\'s python3 with its flags', async () => {
    const sandbox = await prepareProcessSandbox({ stateDir: mkdtempSync(path.join(os.tmpdir(), 'uhlp-psr-')), prefer: 'none', allowUnisolated: true });
    const command = sandbox.launch(launch('python'));
    expect(command.file).toMatch(/^\/usr\/bin\/python3\.\d+$/);
    expect(command.args.slice(0, 5)).toEqual(['-B', '-E', '-S', '-X', 'utf8']);
    expect(command.args).toEqual(expect.arrayContaining(['--definitions', '/host/definitions', '--memory-mb', '64']));
    // No namespace and no bubblewrap filter: the runner loads the sandboxes' seccomp policy on itself, from its staged files.
    const filter = command.args[command.args.indexOf('--seccomp-self') + 1]!;
    expect(readFileSync(filter).equals(seccompFilter())).toBe(true);
    expect(DEFAULT_PYTHON_PATH).toBe('/usr/bin/python3');
  });

  it('fails the start of a python sandbox, and only that, on a host without the CPython it names', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-psr-'));
    const sandbox = await prepareProcessSandbox({ stateDir: path.join(dataDir, 'runtime'), pythonPath: '/nonexistent/python3' });
    expect(() => sandbox.launch(launch('python'))).toThrow(expect.objectContaining({ code: 'UHLP_SANDBOX_UNAVAILABLE', message: expect.stringMatching(/apt-get install python3/) }));
    expect(sandbox.launch(launch('jit')).args).toContain('/app/dist/runners/jit/main.js');
    // The core logs it when it starts.
    expect(sandbox.summary).toMatch(/no python3 here, runner: python pools cannot start$/);
    // Through the driver: a rejected start, and no directory left behind.
    const driver = new ProcessDriver({ logger: silentLogger(), sandbox, workRoot: path.join(dataDir, 'work') });
    try {
      await expect(driver.create({ appId: 'suite', pool: suitePool({ runner: 'python' }), definitionsRoot: makeSuiteDefinitions(), labels: {} })).rejects.toMatchObject({ code: 'UHLP_SANDBOX_UNAVAILABLE' });
      const { readdirSync } = await import('node:fs');
      expect(readdirSync(path.join(dataDir, 'work'))).toEqual([]);
    } finally {
      await driver.close();
    }
  });
});
