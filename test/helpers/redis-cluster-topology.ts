/**
 * A Redis Cluster for tests: three masters and three replicas, each a
 * redis-server process with `--cluster-enabled yes` on a free loopback port (and
 * a free port for its cluster bus), its own temp dir, stopped by pid; joined with
 * `redis-cli --cluster create … --cluster-replicas 1`. Debian's redis-server
 * package holds both binaries.
 *
 * Data nodes persist every write (`appendonly yes`, `appendfsync always`), as
 * docs/runtime-state.md asks. `moveSlot` moves one slot to another master as
 * `redis-cli --cluster reshard` does (SETSLOT IMPORTING/MIGRATING, MIGRATE the
 * keys in batches, SETSLOT NODE), slowly enough for traffic to meet it halfway.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';
import { launchRedisServer, stopRedisServer } from './redis-sentinel-topology.js';
import { retryPassing } from './redis-retry.js';
import { waitFor } from './wait-for.js';

const run = promisify(execFile);

interface Node {
  readonly port: number;
  readonly busPort: number;
  child: import('node:child_process').ChildProcess | undefined;
}

export interface SlotMove {
  /** Keys migrated per MIGRATE. @defaultValue 1 */
  readonly batch?: number;
  /** Pause between two MIGRATEs, so commands meet the slot half moved (ASK, TRYAGAIN). @defaultValue 0 */
  readonly pauseMs?: number;
}

export class RedisClusterTopology {
  private constructor(
    readonly dir: string,
    private readonly nodes: Node[],
  ) {}

  /** Starts six nodes, joins them (three masters, a replica each) and resolves once every node sees the cluster ok. */
  static async start(): Promise<RedisClusterTopology> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-cluster-'));
    const nodes: Node[] = [];
    for (let i = 0; i < 6; i += 1) nodes.push({ port: await freePort(), busPort: await freePort(), child: undefined });
    const topology = new RedisClusterTopology(dir, nodes);
    try {
      for (const node of nodes) await topology.startNode(node);
      await run('redis-cli', ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: 60_000 });
      await topology.waitUntilOk();
      return topology;
    } catch (error) {
      await topology.stop();
      throw error;
    }
  }

  /** The state URL naming every node as a seed. */
  get url(): string {
    return `redis+cluster://${this.nodes.map((node) => `127.0.0.1:${node.port}`).join(',')}`;
  }

  get ports(): number[] {
    return this.nodes.map((node) => node.port);
  }

  /** A plain client of one node (for the test's own look at it). */
  client(port: number): Redis {
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1 });
    client.on('error', () => {});
    return client;
  }

  /** The slot of `key`, as the cluster computes it (CLUSTER KEYSLOT). */
  async keySlot(key: string): Promise<number> {
    return this.ask(this.live().port, async (node) => Number(await node.call('CLUSTER', 'KEYSLOT', key)));
  }

  /** The masters by node id, with the slots each serves, as one node sees them. */
  async masters(): Promise<Array<{ id: string; port: number; slots: Array<[number, number]> }>> {
    const lines = ((await this.ask(this.live().port, (node) => node.call('CLUSTER', 'NODES'))) as string).trim().split('\n');
    return lines
      .map((line) => line.split(' '))
      .filter((fields) => fields[2]!.includes('master') && !fields[2]!.includes('fail'))
      .map((fields) => ({
        id: fields[0]!,
        port: Number(/:(\d+)@/.exec(fields[1]!)![1]),
        slots: fields
          .slice(8)
          .filter((range) => !range.startsWith('['))
          .map((range) => {
            const [from, to] = range.split('-').map(Number);
            return [from!, to ?? from!] as [number, number];
          }),
      }));
  }

  /** The master serving `slot`. */
  async ownerOf(slot: number): Promise<{ id: string; port: number }> {
    const owner = (await this.masters()).find((master) => master.slots.some(([from, to]) => slot >= from && slot <= to));
    if (!owner) throw new Error(`no master serves slot ${slot}`);
    return owner;
  }

  /**
   * Moves `slot` from its master to another one (the next in CLUSTER NODES
   * order), as `redis-cli --cluster reshard` does; resolves once every master
   * names the new owner. Returns the number of keys moved and the new owner's port.
   */
  async moveSlot(slot: number, options: SlotMove = {}): Promise<{ keys: number; to: number }> {
    const masters = await this.masters();
    const from = masters.find((master) => master.slots.some(([low, high]) => slot >= low && slot <= high))!;
    const to = masters[(masters.indexOf(from) + 1) % masters.length]!;
    const batch = options.batch ?? 1;
    let moved = 0;
    await this.ask(to.port, (node) => node.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', from.id));
    await this.ask(from.port, async (node) => {
      await node.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', to.id);
      for (;;) {
        const keys = (await node.call('CLUSTER', 'GETKEYSINSLOT', String(slot), String(batch))) as string[];
        if (keys.length === 0) break;
        await node.call('MIGRATE', '127.0.0.1', String(to.port), '', '0', '5000', 'KEYS', ...keys);
        moved += keys.length;
        if (options.pauseMs) await new Promise((resolve) => setTimeout(resolve, options.pauseMs));
      }
    });
    // The new owner first, then the old one (it stops answering ASK and answers MOVED), then the rest.
    for (const master of [to, from, ...masters.filter((master) => master !== to && master !== from)]) {
      await this.ask(master.port, (node) => node.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id));
    }
    await waitFor(async () => (await this.ownerOf(slot)).id === to.id, { timeoutMs: 10_000, intervalMs: 50, what: `slot ${slot} on ${to.port}` });
    return { keys: moved, to: to.port };
  }

  /**
   * Kills the master on `port` by pid (SIGKILL) and resolves once its replica
   * serves its slots and every remaining node sees the cluster ok again.
   */
  async killMaster(port: number): Promise<void> {
    const node = this.nodes.find((candidate) => candidate.port === port);
    if (!node) throw new Error(`no node on ${port}`);
    const slots = (await this.masters()).find((master) => master.port === port)?.slots ?? [];
    await stopRedisServer(node);
    const rest = this.nodes.filter((candidate) => candidate.child !== undefined);
    await waitFor(
      async () => {
        for (const other of rest) {
          const info = (await this.ask(other.port, (client) => client.call('CLUSTER', 'INFO'))) as string;
          if (!/cluster_state:ok/.test(info)) return false;
        }
        const owner = await this.ownerOfVia(rest[0]!.port, slots[0]?.[0] ?? 0);
        return owner !== port;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `a replica promoted for the master on ${port}` },
    );
  }

  private async ownerOfVia(port: number, slot: number): Promise<number | undefined> {
    const lines = ((await this.ask(port, (node) => node.call('CLUSTER', 'NODES'))) as string).trim().split('\n');
    for (const fields of lines.map((line) => line.split(' '))) {
      if (!fields[2]!.includes('master') || fields[2]!.includes('fail')) continue;
      const served = fields.slice(8).filter((range) => !range.startsWith('[')).some((range) => {
        const [from, to] = range.split('-').map(Number);
        return slot >= from! && slot <= (to ?? from!);
      });
      if (served) return Number(/:(\d+)@/.exec(fields[1]!)![1]);
    }
    return undefined;
  }

  async stop(): Promise<void> {
    for (const node of this.nodes) await stopRedisServer(node);
    await rm(this.dir, { recursive: true, force: true });
  }

  /** A node still running (the first one may have been killed). */
  private live(): Node {
    return this.nodes.find((node) => node.child !== undefined) ?? this.nodes[0]!;
  }

  private async waitUntilOk(): Promise<void> {
    await waitFor(
      async () => {
        for (const node of this.nodes) {
          const info = (await this.ask(node.port, (client) => client.call('CLUSTER', 'INFO'))) as string;
          if (!/cluster_state:ok/.test(info) || !/cluster_slots_ok:16384/.test(info) || !/cluster_known_nodes:6/.test(info)) return false;
        }
        return (await this.masters()).length === 3;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'a cluster of six nodes with every slot served' },
    );
  }

  /** Asks one node; a node answering CLUSTERDOWN or TRYAGAIN for a moment (a replica being promoted) is asked again, up to 20 s. */
  private async ask<T>(port: number, question: (node: Redis) => Promise<T>): Promise<T> {
    return retryPassing(async () => {
      const node = this.client(port);
      try {
        await node.connect();
        return await question(node);
      } finally {
        node.disconnect();
      }
    });
  }

  private async startNode(node: Node): Promise<void> {
    const dir = path.join(this.dir, `node-${node.port}`);
    await mkdir(dir, { recursive: true });
    node.child = await launchRedisServer(
      [
        '--port', String(node.port), '--bind', '127.0.0.1', '--dir', dir, '--protected-mode', 'no', '--save', '',
        '--appendonly', 'yes', '--appendfsync', 'always',
        '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, 'nodes.conf'), '--cluster-port', String(node.busPort),
        '--cluster-node-timeout', '2000',
      ],
      node.port,
    );
  }
}
