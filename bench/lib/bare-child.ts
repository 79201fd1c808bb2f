/**
 * A bare floor process of the benchmarks (bare-forwarder.ts, bare-llm-relay.ts, bare-stream-relay.ts): the
 * script run as a child of this process under tsx's loader, so its pid is the process
 * whose CPU is the floor's (tsx's CLI would run it in a child of its own), ready once it
 * prints `{"port":N}`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface BareChild {
  readonly url: string;
  /** Whose CPU (with its children's) is the floor's. */
  readonly pid: number;
  close(): Promise<void>;
}

const loader = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;

/** Starts `script` (a module URL) with `args` (and `env` added to this process's environment); `what` names it in an error. */
export async function startBareChild(script: string, args: readonly string[], what: string, env: Record<string, string> = {}): Promise<BareChild> {
  const child: ChildProcess = spawn(process.execPath, ['--import', loader, fileURLToPath(script), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /\{"port":(\d+)\}/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`${what} exited with ${code} before it listened`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    async close() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
