/**
 * The two things the lifecycle commands do to a core's spine socket without
 * being endpoint hosts: `uhlp status` asks whether something accepts
 * connections on it, and `uhlp stop` sends `{"type":"exit"}` with the core's
 * secret (read from the file beside the socket: spine-secret.ts).
 */
import net from 'node:net';
import { withDeadline } from '../shared/deadline.js';
import { encodeLine } from './json-lines.js';

export interface SpineControlOptions {
  /**
   * Time allowed to connect (and, for `sendSpineExit`, to flush the message).
   * @defaultValue 2000
   */
  readonly timeoutMs?: number;
}

/** True when a server accepts connections on the socket within the timeout. */
export function probeSpineSocket(socketPath: string, options: SpineControlOptions = {}): Promise<boolean> {
  return withSocket(socketPath, options.timeoutMs ?? 2000, (socket, done) => {
    socket.destroy();
    done(true);
  });
}

export interface SpineExitOptions extends SpineControlOptions {
  /** The core's secret; a core refuses an exit without it. */
  readonly secret: string;
}

/**
 * Sends `{"type":"exit","secret":…}` and closes. True when the message was
 * written to a listening core; false when nothing listens (the core is already
 * gone). Whether the core obeys is seen by watching it exit.
 */
export function sendSpineExit(socketPath: string, options: SpineExitOptions): Promise<boolean> {
  return withSocket(socketPath, options.timeoutMs ?? 2000, (socket, done) => {
    socket.end(encodeLine({ type: 'exit', secret: options.secret }), () => done(true));
  });
}

async function withSocket(
  socketPath: string,
  timeoutMs: number,
  onConnect: (socket: net.Socket, done: (value: boolean) => void) => void,
): Promise<boolean> {
  const socket = net.connect(socketPath);
  const answered = new Promise<boolean>((resolve) => {
    socket.once('connect', () => onConnect(socket, resolve));
    // ENOENT (no socket file) and ECONNREFUSED (a stale file) both mean "not running".
    socket.once('error', () => resolve(false));
  });
  return withDeadline(answered, timeoutMs, () => new Error(`no answer on ${socketPath} within ${timeoutMs} ms`)).catch(() => {
    socket.destroy();
    return false;
  });
}
