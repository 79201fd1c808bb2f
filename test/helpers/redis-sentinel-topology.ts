/**
 * A Redis Sentinel topology for tests: one master, two replicas and three
 * sentinels (`redis-server --sentinel`: the redis-server binary alone, nothing
 * more to install), each its own process on a free loopback port with its own
 * temp dir, stopped by pid. Sentinels see a master down after 1 s and may fail
 * over again after 3 s, so a test sees a failover within a few seconds.
 *
 * Data nodes persist every write (`appendonly yes`, `appendfsync always`) and
 * the master refuses writes without a replica (`min-replicas-to-write 1`), the
 * settings docs/runtime-state.md names for Sentinel.
 *
 * With `tls` (certificate files, e.g. from test/helpers/test-certificates.ts)
 * every process listens with TLS only (`port 0`, `tls-port`), replicas and
 * sentinels reach the master with TLS (`tls-replication yes`), and the URL is
 * `rediss+sentinel://…?caFile=…`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';
import { waitFor, waitForValue } from './wait-for.js';

export const SENTINEL_MASTER_NAME = 'uhlp-test';

interface Node {
  readonly port: number;
  child: ChildProcess | undefined;
}

/** PEM files of a TLS topology: the CA clients check against, and the certificate (and key) every process serves. */
export interface RedisTlsFiles {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
}

/** ioredis options for a client of a TLS process (checked against the CA); none without TLS. */
export function tlsClientOptions(tls: RedisTlsFiles | undefined): { tls?: { ca: Buffer } } {
  return tls === undefined ? {} : { tls: { ca: readFileSync(tls.caFile) } };
}

/** The TLS settings of every redis-server and sentinel: TLS only, to clients and between each other. */
function tlsSettings(tls: RedisTlsFiles, port: number): string[][] {
  return [
    ['port', '0'],
    ['tls-port', String(port)],
    ['tls-cert-file', tls.certFile],
    ['tls-key-file', tls.keyFile],
    ['tls-ca-cert-file', tls.caFile],
    ['tls-auth-clients', 'no'],
    ['tls-replication', 'yes'],
  ];
}

export class RedisSentinelTopology {
  private constructor(
    readonly dir: string,
    /** Data nodes; the first is the master at the start. */
    private readonly data: Node[],
    private readonly sentinels: Node[],
    readonly tls?: RedisTlsFiles,
  ) {}

  /** Starts the six processes and resolves once every sentinel knows both replicas and the other two sentinels. */
  static async start(options: { tls?: RedisTlsFiles } = {}): Promise<RedisSentinelTopology> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-sentinel-'));
    const ports = [];
    for (let i = 0; i < 6; i += 1) ports.push(await freePort());
    const topology = new RedisSentinelTopology(
      dir,
      ports.slice(0, 3).map((port) => ({ port, child: undefined })),
      ports.slice(3).map((port) => ({ port, child: undefined })),
      options.tls,
    );
    try {
      const master = topology.data[0]!.port;
      for (const [index, node] of topology.data.entries()) {
        await topology.startData(node, index === 0 ? [] : ['--replicaof', '127.0.0.1', String(master)]);
      }
      for (const node of topology.sentinels) await topology.startSentinel(node, master);
      await topology.waitUntilSettled(master);
      return topology;
    } catch (error) {
      await topology.stop();
      throw error;
    }
  }

  /** The state URL naming the three sentinels and the master. */
  get url(): string {
    const hosts = this.sentinels.map((node) => `127.0.0.1:${node.port}`).join(',');
    if (this.tls !== undefined) return `rediss+sentinel://${hosts}/${SENTINEL_MASTER_NAME}?caFile=${encodeURIComponent(this.tls.caFile)}`;
    return `redis+sentinel://${hosts}/${SENTINEL_MASTER_NAME}`;
  }

  get sentinelPorts(): number[] {
    return this.sentinels.map((node) => node.port);
  }

  /** The master's port as the first sentinel names it. */
  async masterPort(): Promise<number> {
    return this.askSentinel(0, async (sentinel) => {
      const [, port] = (await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME)) as [string, string];
      return Number(port);
    });
  }

  /** A plain client of one data node (for the test's own look at it). */
  client(port: number): Redis {
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, ...tlsClientOptions(this.tls) });
    client.on('error', () => {});
    return client;
  }

  /** `SENTINEL FAILOVER`, then waits until every sentinel names a new master that answers as one; returns its port. */
  async failover(): Promise<number> {
    const old = await this.masterPort();
    await this.askSentinel(0, (sentinel) => sentinel.call('SENTINEL', 'FAILOVER', SENTINEL_MASTER_NAME));
    return this.waitForNewMaster(old, 20_000);
  }

  /** Kills the master by pid (SIGKILL), then waits until the sentinels have promoted a replica; returns its port. */
  async killMaster(): Promise<number> {
    const old = await this.masterPort();
    const node = this.data.find((candidate) => candidate.port === old)!;
    await stopRedisServer(node);
    return this.waitForNewMaster(old, 30_000);
  }

  /**
   * Starts a data node stopped by killMaster again, as a replica of the master
   * the sentinels name now (what an operator or a restarting pod does); resolves
   * once the master counts it among its connected replicas.
   */
  async restartAsReplica(port: number): Promise<void> {
    const node = this.data.find((candidate) => candidate.port === port);
    if (!node || node.child !== undefined) throw new Error(`no stopped data node on ${port}`);
    const master = await this.masterPort();
    await this.startData(node, ['--replicaof', '127.0.0.1', String(master)]);
    await waitFor(
      async () => {
        const client = this.client(master);
        try {
          await client.connect();
          return new RegExp(`slave\\d+:ip=127\\.0\\.0\\.1,port=${port},state=online`).test(await client.info('replication'));
        } finally {
          client.disconnect();
        }
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `${port} online as a replica of ${master}` },
    );
  }

  async stop(): Promise<void> {
    for (const node of [...this.sentinels, ...this.data]) await stopRedisServer(node);
    await rm(this.dir, { recursive: true, force: true });
  }

  private async waitForNewMaster(old: number, timeoutMs: number): Promise<number> {
    return waitForValue(
      async () => {
        const named = new Set<number>();
        for (let index = 0; index < this.sentinels.length; index += 1) {
          if (this.sentinels[index]!.child === undefined) continue;
          named.add(
            await this.askSentinel(index, async (sentinel) => Number(((await sentinel.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME)) as [string, string])[1])),
          );
        }
        const [port] = [...named];
        if (named.size !== 1 || port === old) return undefined;
        return (await this.role(port!)) === 'master' ? port : undefined;
      },
      { timeoutMs, intervalMs: 100, what: `a master other than ${old}` },
    );
  }

  private async role(port: number): Promise<string> {
    const client = this.client(port);
    try {
      await client.connect();
      return ((await client.call('ROLE')) as [string])[0];
    } finally {
      client.disconnect();
    }
  }

  private async waitUntilSettled(master: number): Promise<void> {
    await waitFor(
      async () => {
        for (let index = 0; index < this.sentinels.length; index += 1) {
          const known = await this.askSentinel(index, async (sentinel) => {
            const replicas = (await sentinel.call('SENTINEL', 'REPLICAS', SENTINEL_MASTER_NAME)) as string[][];
            const others = (await sentinel.call('SENTINEL', 'SENTINELS', SENTINEL_MASTER_NAME)) as string[][];
            // A replica counts once it is not flagged down or disconnected.
            return replicas.filter((fields) => fields[fields.indexOf('flags') + 1] === 'slave').length === 2 && others.length === 2;
          });
          if (!known) return false;
        }
        const client = this.client(master);
        try {
          await client.connect();
          if (!/connected_slaves:2/.test(await client.info('replication'))) return false;
          // min-replicas-to-write counts a replica once it has acknowledged the stream: a write says when.
          await client.set('uhlp-topology:probe', '1');
          return true;
        } finally {
          client.disconnect();
        }
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'sentinels that know two replicas and each other' },
    );
  }

  private async askSentinel<T>(index: number, ask: (sentinel: Redis) => Promise<T>): Promise<T> {
    const sentinel = new Redis({ host: '127.0.0.1', port: this.sentinels[index]!.port, lazyConnect: true, maxRetriesPerRequest: 1, ...tlsClientOptions(this.tls) });
    sentinel.on('error', () => {});
    try {
      await sentinel.connect();
      return await ask(sentinel);
    } finally {
      sentinel.disconnect();
    }
  }

  private async startData(node: Node, extra: string[]): Promise<void> {
    const dir = path.join(this.dir, `data-${node.port}`);
    await mkdir(dir, { recursive: true });
    node.child = await launchRedisServer(
      [
        ...(this.tls !== undefined ? tlsSettings(this.tls, node.port).flatMap(([name, value]) => [`--${name}`, value!]) : ['--port', String(node.port)]),
        '--bind', '127.0.0.1', '--dir', dir, '--protected-mode', 'no', '--save', '',
        '--appendonly', 'yes', '--appendfsync', 'always', '--min-replicas-to-write', '1', '--min-replicas-max-lag', '10', '--repl-diskless-sync-delay', '0',
        ...extra,
      ],
      node.port,
      this.tls,
    );
  }

  private async startSentinel(node: Node, master: number): Promise<void> {
    const dir = path.join(this.dir, `sentinel-${node.port}`);
    await mkdir(dir, { recursive: true });
    // Sentinel rewrites its config file as it learns the topology: each gets its own, writable.
    const file = path.join(dir, 'sentinel.conf');
    await writeFile(
      file,
      [
        ...(this.tls !== undefined ? tlsSettings(this.tls, node.port).map((pair) => pair.join(' ')) : [`port ${node.port}`]),
        'bind 127.0.0.1',
        'protected-mode no',
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${master} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} 1000`,
        `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 3000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 2`,
        '',
      ].join('\n'),
    );
    node.child = await launchRedisServer([file, '--sentinel'], node.port, this.tls);
  }
}

/** Spawns redis-server with `args` and resolves once `port` answers PING (the Cluster topology's nodes too), over TLS with `tls`. */
export async function launchRedisServer(args: string[], port: number, tls?: RedisTlsFiles): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`redis-server ${args.join(' ')} exited with ${String(code)}: ${output}`)));
  });
  failed.catch(() => {});
  await Promise.race([
    failed,
    waitFor(
      async () => {
        const probe = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...tlsClientOptions(tls) });
        probe.on('error', () => {});
        try {
          await probe.connect();
          return (await probe.ping()) === 'PONG';
        } finally {
          probe.disconnect();
        }
      },
      { timeoutMs: 10_000, intervalMs: 20, what: `redis-server on ${port}` },
    ),
  ]);
  child.removeAllListeners('exit');
  return child;
}

/** Kills a node's redis-server by pid (SIGKILL) and waits for it to exit. */
export async function stopRedisServer(node: { child: ChildProcess | undefined }): Promise<void> {
  const child = node.child;
  node.child = undefined;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.kill(child.pid!, 'SIGKILL');
  await exited;
}
