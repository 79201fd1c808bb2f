import { describe, expect, it } from 'vitest';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { podConfigHash, sandboxPod, type SandboxPodInput } from './sandbox-pod.js';

type Container = { command: string[]; args: string[]; terminationMessagePolicy: string };
const containerOf = (runner: 'jit' | 'llm' | 'csjs' | 'python'): Container =>
  ((sandboxPod({ namespace: 'ns', appId: 'shop', pool: poolSpec({ name: 'p', runner }) }, { state: 'warm' }) as { spec: { containers: Container[] } }).spec.containers[0]!);

describe('a sandbox pod', () => {
  it('starts every Node runner under the permission model, and allows native addons to the csjs runner only', () => {
    for (const runner of ['jit', 'llm', 'csjs'] as const) expect(containerOf(runner).command).toContain('--permission');
    expect(containerOf('csjs').command).toContain('--allow-addons');
    expect(containerOf('jit').command).not.toContain('--allow-addons');
    expect(containerOf('llm').command).not.toContain('--allow-addons');
  });

  it("has the python runner load the sandboxes' seccomp policy on itself from its image: the runtime's default lets a process fork", () => {
    const { args } = containerOf('python');
    expect(args.slice(args.indexOf('--seccomp-self'), args.indexOf('--seccomp-self') + 2)).toEqual(['--seccomp-self', '/app/seccomp-filter.bpf']);
    for (const runner of ['jit', 'llm', 'csjs'] as const) expect(containerOf(runner).args).not.toContain('--seccomp-self');
  });

  it("gives a python pod read-only /dev/shm and /dev/mqueue, and leaves other pods and their hashes as they were", () => {
    const pod = (runner: 'jit' | 'python') =>
      sandboxPod({ namespace: 'ns', appId: 'shop', pool: poolSpec({ name: 'p', runner }) }, { state: 'warm' }) as {
        spec: { containers: Array<{ volumeMounts: Array<{ mountPath: string; readOnly?: boolean }> }>; volumes: Array<{ name: string }> };
      };
    const mounts = pod('python').spec.containers[0]!.volumeMounts;
    expect(mounts.filter((mount) => mount.readOnly === true).map((mount) => mount.mountPath)).toEqual(['/dev/shm', '/dev/mqueue']);
    expect(pod('jit').spec.containers[0]!.volumeMounts.map((mount) => mount.mountPath)).toEqual(['/work']);
    expect(pod('jit').spec.volumes.map((volume) => volume.name)).toEqual(['work']);
  });

  it('keeps its last log lines as the termination message: they tell a heap exhaustion from a crash', () => {
    expect(containerOf('jit').terminationMessagePolicy).toBe('FallbackToLogsOnError');
  });
});

describe('a sandbox pod of runner: mcp', () => {
  const server = { packageKey: '486aa86113e467cddbf554c919d1b30c', entry: 'node_modules/@modelcontextprotocol/server-memory/dist/index.js', args: ['{work}/x'], env: ['MEMORY_FILE_PATH={work}/memory.json'] };
  const input = (packageCache: SandboxPodInput['packageCache'] = { claimName: 'mcp-packages' }): SandboxPodInput => ({
    namespace: 'ns',
    appId: 'shop',
    pool: poolSpec({ name: 'memory', runner: 'mcp' }),
    mcpServer: server,
    packageCache,
  });
  type McpPod = {
    spec: {
      containers: Array<{ command: string[]; args: string[]; env: Array<{ name: string }>; volumeMounts: unknown[]; securityContext: unknown }>;
      volumes: unknown[];
      securityContext: unknown;
      automountServiceAccountToken: boolean;
    };
  };
  const podOf = (value: SandboxPodInput): McpPod => sandboxPod(value, { state: 'warm' }) as unknown as McpPod;

  it("starts the mcp-host with the server as the Docker driver's container does, and no MCP endpoint nor app files", () => {
    const container = podOf(input()).spec.containers[0]!;
    expect(container.args).toEqual([
      '--listen', 'tcp:0.0.0.0:8080', '--work-dir', '/work', '--concurrency', '1', '--drain-on-sigterm',
      '--server-entry', '/mcp-server/node_modules/@modelcontextprotocol/server-memory/dist/index.js',
      '--server-arg', '{work}/x',
      '--server-env', 'MEMORY_FILE_PATH={work}/memory.json',
    ]);
    expect(container.args.join(' ')).not.toMatch(/--mcp-socket|--definitions/);
    // Node's permission model lets it read the package, and write only its tree.
    expect(container.command).toEqual(expect.arrayContaining(['--permission', '--allow-fs-read=/mcp-server', '--allow-fs-write=/work']));
  });

  it('mounts only its package, read-only: the cache volume with a subPath of the package directory', () => {
    const pod = podOf(input());
    expect(pod.spec.containers[0]!.volumeMounts).toContainEqual({ name: 'mcp-server', mountPath: '/mcp-server', subPath: server.packageKey, readOnly: true });
    expect(pod.spec.volumes).toContainEqual({ name: 'mcp-server', persistentVolumeClaim: { claimName: 'mcp-packages', readOnly: true } });
    const onNode = podOf(input({ hostPath: '/var/lib/uhlp/mcp-packages' }));
    expect(onNode.spec.volumes).toContainEqual({ name: 'mcp-server', hostPath: { path: '/var/lib/uhlp/mcp-packages', type: 'Directory' } });
  });

  it('keeps the hardening of every sandbox pod: non-root, read-only root, no capabilities, runtime seccomp, no service account token', () => {
    const pod = podOf(input());
    const plain = sandboxPod({ namespace: 'ns', appId: 'shop', pool: poolSpec({ name: 'p', runner: 'jit' }) }, { state: 'warm' }) as unknown as McpPod;
    expect(pod.spec.securityContext).toEqual(plain.spec.securityContext);
    expect(pod.spec.containers[0]!.securityContext).toEqual(plain.spec.containers[0]!.securityContext);
    expect(pod.spec.automountServiceAccountToken).toBe(false);
  });

  it('hashes the server: a pod of another package, argument or cache volume is never claimed; other pools keep their hash', () => {
    const hash = podConfigHash(input());
    expect(podConfigHash({ ...input(), mcpServer: { ...server, packageKey: 'ffffffffffffffffffffffffffffffff' } })).not.toBe(hash);
    expect(podConfigHash({ ...input(), mcpServer: { ...server, args: [] } })).not.toBe(hash);
    expect(podConfigHash(input({ hostPath: '/srv/mcp' }))).not.toBe(hash);
    // The pool as the API server gives it back (its keys in another order) is the same pool.
    const { packageKey, entry, args, env } = server;
    const { cpus, memoryMb, timeoutMs } = input().pool.limits;
    expect(podConfigHash({ ...input(), mcpServer: { env, args, entry, packageKey }, pool: { ...input().pool, limits: { timeoutMs, memoryMb, cpus } } })).toBe(hash);
    // The hash of a jit pool is the one pods of the earlier layout carry.
    expect(podConfigHash({ namespace: 'ns', appId: 'shop', pool: poolSpec({ name: 'p', runner: 'jit' }) })).toBe(
      podConfigHash({ namespace: 'ns', appId: 'shop', pool: poolSpec({ name: 'p', runner: 'jit' }), packageCache: { claimName: 'x' } }),
    );
  });

  it('is refused without a package cache volume', () => {
    expect(() => sandboxPod({ ...input(), packageCache: undefined }, { state: 'warm' })).toThrow(/no package cache volume/);
  });
});
