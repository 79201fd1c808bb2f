/**
 * The core's side of the endpoint spine: a Unix-socket server where endpoint
 * hosts register routes (affordance key + capability handle) and the core
 * invokes them. The server only relays: what an endpoint does, and whether the
 * calling app may ask for it, is decided elsewhere.
 *
 * A route belongs to the connection that registered it last, so a host that
 * reconnects simply registers again; a route whose host is gone answers
 * UHLP_ENDPOINT_UNAVAILABLE at once instead of waiting for a timeout.
 *
 * Whoever serves `tool.shell.exec` receives every shell command an app runs,
 * and whoever may send `exit` can stop the core: the socket's mode keeps other
 * users out, and the core's secret (spine-secret.ts) keeps out everything else
 * that runs as the core's user. Protected routes and `exit` need the secret;
 * other routes (a chat client's) do not, but can never take a protected one.
 */
import { randomUUID } from 'node:crypto';
import { chmod, unlink } from 'node:fs/promises';
import net from 'node:net';
import { withDeadline } from '../shared/deadline.js';
import { listenOn } from '../shared/listen-on.js';
import { UhlpError } from '../shared/errors.js';
import { SHELL_AFFORDANCE, SHELL_CAPABILITY } from '../std-body/shell-exec.js';
import { WEB_AFFORDANCE, WEB_CAPABILITY } from '../std-body/web-fetch.js';
import { LineSplitter, encodeLine } from './json-lines.js';
import { secretMatches, writeSpineSecret } from './spine-secret.js';
import {
  type EndpointResult,
  type ErrorMessage,
  type InvokeMessage,
  type ResultMessage,
  type ToHostMessage,
  parseToCoreMessage,
  resultFromWire,
  routeKey,
} from './spine-protocol.js';

export interface SpineServerOptions {
  /** Path of the Unix socket to listen on. */
  readonly socketPath: string;
  /**
   * The secret the core issued for this run (spine-secret.ts). Registrations of
   * protected routes and `exit` are obeyed only when they carry it.
   */
  readonly secret: string;
  /**
   * Where `listen()` writes the secret (mode 0600), once the socket is known not
   * to belong to a live core; `close()` removes it. Not written when absent.
   * @defaultValue none
   */
  readonly secretFile?: string;
  /**
   * Affordance keys that only a registration carrying the secret may take, with
   * any capability handle.
   * @defaultValue the std-body host's: `tool.shell.exec`, `tool.web.fetch`
   */
  readonly protectedAffordances?: readonly string[];
  /**
   * Capability handles that only a registration carrying the secret may take,
   * with any affordance key.
   * @defaultValue the std-body host's: `cap.std.shell`, `cap.std.web.fetch`
   */
  readonly protectedCapabilities?: readonly string[];
  /**
   * Called when a client sends `{"type":"exit"}` with the secret (what `uhlp
   * stop` does). The server keeps running; stopping the process is the hook's job.
   * @defaultValue no-op
   */
  readonly onExit?: () => void;
  /**
   * Longest accepted line in bytes. Results carry command output and fetched
   * bodies, so this is generous.
   * @defaultValue 16 MiB
   */
  readonly maxLineBytes?: number;
  /**
   * Default for `invoke`'s `timeoutMs` when the caller gives none.
   * @defaultValue 30000
   */
  readonly defaultTimeoutMs?: number;
  /**
   * Called for protocol errors a client caused (bad lines, unknown invocation
   * ids: UHLP_SPINE_BAD_MESSAGE) and for refusals (a protected route or `exit`
   * without the secret: UHLP_SPINE_FORBIDDEN), for logging. They are also
   * answered on the wire; the connection stays open.
   * @defaultValue no-op
   */
  readonly onProtocolError?: (error: UhlpError) => void;
}

export interface InvokeOptions {
  /** Time the host has to answer. @defaultValue the server's `defaultTimeoutMs` */
  readonly timeoutMs?: number;
  /** Aborts the wait (the host is not told; its late answer is dropped). */
  readonly signal?: AbortSignal;
}

/** A registered route as the server sees it. */
export interface RouteInfo {
  readonly affordanceKey: string;
  readonly capabilityHandle: string;
  /** Opaque id of the connection that serves the route. */
  readonly connectionId: string;
}

export interface SpineServer {
  /** Starts listening; removes a stale socket file, refuses a live one. */
  listen(): Promise<void>;
  /**
   * Sends an invocation to the route's host and resolves with its result.
   * Rejects with UHLP_ENDPOINT_UNAVAILABLE when no host serves the route or the
   * host disconnects before answering, UHLP_ENDPOINT_TIMEOUT when it is too slow.
   */
  invoke(affordanceKey: string, capabilityHandle: string, normalizedPayload: unknown, options?: InvokeOptions): Promise<EndpointResult>;
  /** The routes currently served, for status pages and tests. */
  routes(): RouteInfo[];
  /** How many clients are connected (hosts, and CLI probes while they last). */
  connectionCount(): number;
  /** Whether a connected host serves the route. */
  isAvailable(affordanceKey: string, capabilityHandle: string): boolean;
  /** Resolves once the route is served, or rejects after `timeoutMs`. */
  waitForRoute(affordanceKey: string, capabilityHandle: string, timeoutMs: number): Promise<void>;
  /** Stops listening, drops every connection, fails pending invocations, removes the socket file. */
  close(): Promise<void>;
}

interface Connection {
  readonly id: string;
  readonly socket: net.Socket;
  readonly pending: Set<string>;
}

interface Pending {
  readonly connection: Connection;
  readonly route: string;
  readonly resolve: (result: EndpointResult) => void;
  readonly reject: (error: UhlpError) => void;
}

const DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024;
const STD_BODY_AFFORDANCES = [SHELL_AFFORDANCE, WEB_AFFORDANCE];
const STD_BODY_CAPABILITIES = [SHELL_CAPABILITY, WEB_CAPABILITY];
const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_SOCKET_PATH_BYTES = 107;

export function createSpineServer(options: SpineServerOptions): SpineServer {
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  const defaultTimeoutMs = options.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  // An empty secret would make every check meaningless; refuse it where the mistake is made.
  if (typeof options.secret !== 'string' || options.secret.length < 16) {
    throw new UhlpError('UHLP_CONFIG_INVALID', 'the spine server needs a secret of at least 16 characters', { name: 'secret' });
  }
  const protectedAffordances = new Set(options.protectedAffordances ?? STD_BODY_AFFORDANCES);
  const protectedCapabilities = new Set(options.protectedCapabilities ?? STD_BODY_CAPABILITIES);
  const routes = new Map<string, { affordanceKey: string; capabilityHandle: string; connection: Connection }>();
  const connections = new Set<Connection>();
  const pending = new Map<string, Pending>();
  const routeWaiters = new Set<() => void>();
  let server: net.Server | undefined;
  let closed = false;

  function isAvailable(affordanceKey: string, capabilityHandle: string): boolean {
    const route = routes.get(routeKey(affordanceKey, capabilityHandle));
    return route !== undefined && !route.connection.socket.destroyed;
  }

  function send(connection: Connection, message: ToHostMessage): void {
    if (!connection.socket.destroyed) connection.socket.write(encodeLine(message));
  }

  function protocolError(connection: Connection, message: string, details: Record<string, unknown>): void {
    const error = new UhlpError('UHLP_SPINE_BAD_MESSAGE', message, details);
    options.onProtocolError?.(error);
    const answer: ErrorMessage = {
      type: 'error',
      code: error.code,
      message,
      ...(typeof details['invocationId'] === 'string' ? { invocation_id: details['invocationId'] } : {}),
    };
    send(connection, answer);
  }

  /** Answers a refused message with UHLP_SPINE_FORBIDDEN; the connection stays open, nothing else changes. */
  function refuse(connection: Connection, message: string, route?: { affordance_key: string; capability_handle: string }): void {
    const error = new UhlpError('UHLP_SPINE_FORBIDDEN', message, {
      connectionId: connection.id,
      ...(route !== undefined ? { affordanceKey: route.affordance_key, capabilityHandle: route.capability_handle } : {}),
    });
    options.onProtocolError?.(error);
    send(connection, { type: 'error', code: error.code, message, ...(route ?? {}) });
  }

  function unavailable(route: string, why: string): UhlpError {
    return new UhlpError('UHLP_ENDPOINT_UNAVAILABLE', `endpoint ${route} is unavailable: ${why}`, { route });
  }

  function handleLine(connection: Connection, line: string): void {
    const parsed = parseToCoreMessage(line);
    if (!parsed.ok) {
      protocolError(connection, parsed.message, {
        ...(parsed.field !== undefined ? { field: parsed.field } : {}),
        ...(parsed.invocationId !== undefined ? { invocationId: parsed.invocationId } : {}),
      });
      return;
    }
    const message = parsed.message;
    switch (message.type) {
      case 'endpoint_register': {
        const key = routeKey(message.affordance_key, message.capability_handle);
        const guarded = protectedAffordances.has(message.affordance_key) || protectedCapabilities.has(message.capability_handle);
        if (guarded && !secretMatches(options.secret, message.secret)) {
          refuse(connection, `route ${key} is protected: registering it needs the core's secret`, {
            affordance_key: message.affordance_key,
            capability_handle: message.capability_handle,
          });
          return;
        }
        // Last registration wins: a host that reconnected before the old socket
        // was noticed dead must not be locked out by its own ghost.
        routes.set(key, { affordanceKey: message.affordance_key, capabilityHandle: message.capability_handle, connection });
        send(connection, { type: 'endpoint_registered', affordance_key: message.affordance_key, capability_handle: message.capability_handle });
        for (const wake of [...routeWaiters]) wake();
        return;
      }
      case 'endpoint_result':
        handleResult(connection, message);
        return;
      case 'exit':
        if (!secretMatches(options.secret, message.secret)) {
          refuse(connection, "exit needs the core's secret (uhlp stop reads it from the data directory)");
          return;
        }
        options.onExit?.();
        return;
    }
  }

  function handleResult(connection: Connection, message: ResultMessage): void {
    const entry = pending.get(message.invocation_id);
    // Only the connection the invocation went to may answer it.
    if (entry === undefined || entry.connection !== connection) {
      protocolError(connection, `no pending invocation ${message.invocation_id} on this connection`, {
        field: 'invocation_id',
        invocationId: message.invocation_id,
      });
      return;
    }
    pending.delete(message.invocation_id);
    connection.pending.delete(message.invocation_id);
    entry.resolve(resultFromWire(message));
  }

  function dropConnection(connection: Connection): void {
    if (!connections.delete(connection)) return;
    for (const [key, route] of routes) {
      if (route.connection === connection) routes.delete(key);
    }
    for (const id of connection.pending) {
      const entry = pending.get(id);
      pending.delete(id);
      entry?.reject(unavailable(entry.route, 'its host disconnected before answering'));
    }
    connection.pending.clear();
  }

  function accept(socket: net.Socket): void {
    const connection: Connection = { id: randomUUID(), socket, pending: new Set() };
    connections.add(connection);
    const splitter = new LineSplitter(maxLineBytes);
    socket.on('data', (chunk: Buffer) => {
      const { lines, oversized } = splitter.push(chunk);
      for (let i = 0; i < oversized; i++) protocolError(connection, `line longer than ${maxLineBytes} bytes dropped`, { maxLineBytes });
      for (const line of lines) handleLine(connection, line);
    });
    // A host that vanishes mid-write raises EPIPE/ECONNRESET here; the close
    // that follows does the cleanup, the error itself must not crash the core.
    socket.on('error', () => {});
    socket.on('close', () => dropConnection(connection));
  }

  async function removeStaleSocket(socketPath: string): Promise<void> {
    const live = await new Promise<boolean>((resolve) => {
      const probe = net.connect(socketPath);
      probe.once('connect', () => {
        probe.destroy();
        resolve(true);
      });
      probe.once('error', () => resolve(false));
    });
    if (live) throw new UhlpError('UHLP_CONFIG_INVALID', `spine socket ${socketPath} is already served by another process`, { socketPath });
    await unlink(socketPath).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  return {
    async listen(): Promise<void> {
      // sockaddr_un holds 108 bytes with the terminating NUL; a longer path fails
      // deep in libuv with a bare EINVAL, so say what is wrong here.
      if (Buffer.byteLength(options.socketPath) > MAX_SOCKET_PATH_BYTES) {
        throw new UhlpError(
          'UHLP_CONFIG_INVALID',
          `spine socket path is longer than ${MAX_SOCKET_PATH_BYTES} bytes (choose a shorter data dir): ${options.socketPath}`,
          { socketPath: options.socketPath },
        );
      }
      await removeStaleSocket(options.socketPath);
      // Only now: a core that failed to start beside a live one must not replace its secret.
      if (options.secretFile !== undefined) await writeSpineSecret(options.secretFile, options.secret);
      const listening = net.createServer(accept);
      await listenOn(listening, { path: options.socketPath });
      // Whoever can connect can register `tool.shell.exec` and receive every
      // shell call: only the core's own user may.
      await chmod(options.socketPath, 0o600);
      server = listening;
    },

    invoke(affordanceKey, capabilityHandle, normalizedPayload, invokeOptions = {}): Promise<EndpointResult> {
      const key = routeKey(affordanceKey, capabilityHandle);
      const route = routes.get(key);
      if (closed || route === undefined || route.connection.socket.destroyed) {
        return Promise.reject(unavailable(key, 'no connected host has registered it'));
      }
      const timeoutMs = invokeOptions.timeoutMs ?? defaultTimeoutMs;
      const invocationId = randomUUID();
      const connection = route.connection;
      return new Promise<EndpointResult>((resolve, reject) => {
        const settle = (): void => {
          clearTimeout(timer);
          invokeOptions.signal?.removeEventListener('abort', onAbort);
          pending.delete(invocationId);
          connection.pending.delete(invocationId);
        };
        const timer = setTimeout(() => {
          settle();
          reject(new UhlpError('UHLP_ENDPOINT_TIMEOUT', `endpoint ${key} did not answer within ${timeoutMs} ms`, { route: key, timeoutMs }));
        }, timeoutMs);
        const onAbort = (): void => {
          settle();
          reject(invokeOptions.signal?.reason ?? new Error('aborted'));
        };
        if (invokeOptions.signal?.aborted) {
          onAbort();
          return;
        }
        invokeOptions.signal?.addEventListener('abort', onAbort, { once: true });
        pending.set(invocationId, {
          connection,
          route: key,
          resolve: (result) => {
            settle();
            resolve(result);
          },
          reject: (error) => {
            settle();
            reject(error);
          },
        });
        connection.pending.add(invocationId);
        const message: InvokeMessage = {
          type: 'endpoint_invoke',
          invocation_id: invocationId,
          affordance_key: affordanceKey,
          capability_handle: capabilityHandle,
          action: { normalized_payload: normalizedPayload },
        };
        send(connection, message);
      });
    },

    routes(): RouteInfo[] {
      return [...routes.values()].map((route) => ({
        affordanceKey: route.affordanceKey,
        capabilityHandle: route.capabilityHandle,
        connectionId: route.connection.id,
      }));
    },

    isAvailable,

    connectionCount(): number {
      return connections.size;
    },

    waitForRoute(affordanceKey, capabilityHandle, timeoutMs): Promise<void> {
      if (isAvailable(affordanceKey, capabilityHandle)) return Promise.resolve();
      const key = routeKey(affordanceKey, capabilityHandle);
      const registered = (signal: AbortSignal): Promise<void> =>
        new Promise<void>((resolve) => {
          const wake = (): void => {
            if (!routes.has(key)) return;
            routeWaiters.delete(wake);
            resolve();
          };
          routeWaiters.add(wake);
          signal.addEventListener('abort', () => routeWaiters.delete(wake), { once: true });
        });
      return withDeadline(registered, timeoutMs, () => unavailable(key, `not registered within ${timeoutMs} ms`));
    },

    async close(): Promise<void> {
      closed = true;
      const listening = server;
      server = undefined;
      for (const connection of [...connections]) {
        connection.socket.destroy();
        dropConnection(connection);
      }
      // Only a server that listened owns the socket file; a failed listen must
      // not remove the socket of the process that holds it.
      if (listening !== undefined) {
        await new Promise<void>((resolve) => listening.close(() => resolve()));
        await unlink(options.socketPath).catch(() => {});
        if (options.secretFile !== undefined) await unlink(options.secretFile).catch(() => {});
      }
    },
  };
}
