/**
 * A private redis-server for tests that must stop and restart Redis for real: its
 * own port on 127.0.0.1, its own temp dir (AOF persistence), stopped by pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './free-port.js';

export class RedisServerProcess {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  static async create(): Promise<RedisServerProcess> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-redis-'));
    return new RedisServerProcess(await freePort(), dir);
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts redis-server and resolves once it accepts TCP connections. */
  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      // appendfsync always: every acknowledged write is on disk, even across a SIGKILL.
      ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--protected-mode', 'no'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child = child;
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + 10_000;
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`redis-server exited with ${String(code)}: ${output}`)));
      const probe = (): void => {
        const socket = net.connect(this.port, '127.0.0.1');
        socket.once('connect', () => {
          socket.destroy();
          child.removeAllListeners('exit');
          resolve();
        });
        socket.once('error', () => {
          socket.destroy();
          if (Date.now() > deadline) reject(new Error(`redis-server did not listen on ${this.port}: ${output}`));
          else setTimeout(probe, 20);
        });
      };
      probe();
    });
  }

  /** Kills the server by pid (SIGKILL: a crash, no shutdown save) and waits for it to exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    process.kill(child.pid!, signal);
    await exited;
    this.child = undefined;
  }

  async destroy(): Promise<void> {
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}
