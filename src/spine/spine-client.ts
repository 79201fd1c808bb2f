/**
 * The endpoint host's side of the spine: connect to the core's socket, register
 * routes, answer invocations with handlers, and survive the core going away.
 * After any disconnect the client reconnects with exponential backoff and
 * registers every route again; the server treats that as idempotent.
 */
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { backoffDelay } from '../shared/backoff.js';
import { nextEvent, withDeadline } from '../shared/deadline.js';
import { LineSplitter, encodeLine } from './json-lines.js';
import {
  type EndpointOutcome,
  type InvokeMessage,
  type ToCoreMessage,
  parseToHostMessage,
  resultToWire,
  routeKey,
} from './spine-protocol.js';

/** What a handler gets besides the payload. */
export interface InvocationContext {
  readonly invocationId: string;
  readonly affordanceKey: string;
  readonly capabilityHandle: string;
}

/** Handles one invocation. A throw is answered as `rejected` with reason `handler_error`. */
export type EndpointHandler = (normalizedPayload: unknown, context: InvocationContext) => Promise<EndpointOutcome>;

export interface SpineClientOptions {
  /** The core's spine socket. */
  readonly socketPath: string;
  /**
   * The core's secret, sent with every registration: the core refuses protected
   * routes (the std-body host's) without it. A function is asked again on every
   * registration, so that a host outliving a core restart reads the new core's
   * secret (from its file) instead of offering the old one.
   * @defaultValue none (only unprotected routes can be registered)
   */
  readonly secret?: string | (() => string | undefined);
  /**
   * First reconnect delay; it doubles per failed attempt, with jitter.
   * @defaultValue 100
   */
  readonly initialReconnectDelayMs?: number;
  /**
   * Ceiling of the reconnect delay.
   * @defaultValue 5000
   */
  readonly maxReconnectDelayMs?: number;
  /**
   * Longest accepted line from the core, in bytes.
   * @defaultValue 16 MiB
   */
  readonly maxLineBytes?: number;
}

/**
 * Events: `connected`, `disconnected`, `registered` (route key), `error-message`
 * (an error line from the core: {code, message, invocation_id?}).
 */
export interface SpineClient extends EventEmitter {
  /** Adds a route. Registered at once when connected, and again after every reconnect. */
  handle(affordanceKey: string, capabilityHandle: string, handler: EndpointHandler): void;
  /** Starts connecting (and reconnecting until `close`). */
  start(): void;
  /** Resolves once every route is acknowledged on the current connection, or rejects after `timeoutMs`. */
  ready(timeoutMs: number): Promise<void>;
  /** Whether the client is connected and every route is acknowledged. */
  isReady(): boolean;
  /** Stops reconnecting and closes the connection. In-flight handlers finish but their results are dropped. */
  close(): Promise<void>;
}

interface Route {
  readonly affordanceKey: string;
  readonly capabilityHandle: string;
  readonly handler: EndpointHandler;
}

export function createSpineClient(options: SpineClientOptions): SpineClient {
  const initialDelay = options.initialReconnectDelayMs ?? 100;
  const maxDelay = options.maxReconnectDelayMs ?? 5000;
  const maxLineBytes = options.maxLineBytes ?? 16 * 1024 * 1024;
  const routes = new Map<string, Route>();
  const acknowledged = new Set<string>();
  const emitter = new EventEmitter();
  let socket: net.Socket | undefined;
  let connected = false;
  let closed = true;
  let attempt = 0;
  let reconnectTimer: NodeJS.Timeout | undefined;

  function write(message: ToCoreMessage): void {
    if (socket !== undefined && connected && !socket.destroyed) socket.write(encodeLine(message));
  }

  function register(route: Route): void {
    const secret = typeof options.secret === 'function' ? options.secret() : options.secret;
    write({
      type: 'endpoint_register',
      affordance_key: route.affordanceKey,
      capability_handle: route.capabilityHandle,
      ...(secret !== undefined ? { secret } : {}),
    });
  }

  function isReady(): boolean {
    return connected && [...routes.keys()].every((key) => acknowledged.has(key));
  }

  async function dispatch(message: InvokeMessage, from: net.Socket): Promise<void> {
    const key = routeKey(message.affordance_key, message.capability_handle);
    const route = routes.get(key);
    let outcome: EndpointOutcome;
    if (route === undefined) {
      outcome = { outcome: 'rejected', reason: 'unknown_route', observation: { route: key } };
    } else {
      try {
        outcome = await route.handler(message.action.normalized_payload, {
          invocationId: message.invocation_id,
          affordanceKey: message.affordance_key,
          capabilityHandle: message.capability_handle,
        });
      } catch (error) {
        outcome = { outcome: 'rejected', reason: 'handler_error', observation: { message: error instanceof Error ? error.message : String(error) } };
      }
    }
    // The invocation belongs to the connection it came on; after a reconnect the
    // core has already failed it, so the answer is dropped.
    if (from === socket) write(resultToWire(message.invocation_id, outcome));
  }

  function handleLine(line: string, from: net.Socket): void {
    const parsed = parseToHostMessage(line);
    if (!parsed.ok) {
      emitter.emit('error-message', { code: 'UHLP_SPINE_BAD_MESSAGE', message: parsed.message });
      return;
    }
    const message = parsed.message;
    switch (message.type) {
      case 'endpoint_registered': {
        const key = routeKey(message.affordance_key, message.capability_handle);
        acknowledged.add(key);
        emitter.emit('registered', key);
        if (isReady()) emitter.emit('ready');
        return;
      }
      case 'endpoint_invoke':
        void dispatch(message, from);
        return;
      case 'error':
        emitter.emit('error-message', message);
        return;
    }
  }

  function scheduleReconnect(): void {
    if (closed || reconnectTimer !== undefined) return;
    // Jitter keeps a fleet of hosts from reconnecting in lockstep after a core restart.
    const delay = backoffDelay(attempt, { initialMs: initialDelay, maxMs: maxDelay });
    attempt += 1;
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      connect();
    }, delay);
  }

  function connect(): void {
    if (closed) return;
    const current = net.connect(options.socketPath);
    socket = current;
    const splitter = new LineSplitter(maxLineBytes);
    current.on('connect', () => {
      connected = true;
      attempt = 0;
      acknowledged.clear();
      emitter.emit('connected');
      for (const route of routes.values()) register(route);
      if (routes.size === 0) emitter.emit('ready');
    });
    current.on('data', (chunk: Buffer) => {
      const { lines } = splitter.push(chunk);
      for (const line of lines) handleLine(line, current);
    });
    current.on('error', () => {
      // 'close' follows and schedules the reconnect.
    });
    current.on('close', () => {
      if (socket !== current) return;
      const wasConnected = connected;
      connected = false;
      acknowledged.clear();
      socket = undefined;
      if (wasConnected) emitter.emit('disconnected');
      scheduleReconnect();
    });
  }

  const client = Object.assign(emitter, {
    handle(affordanceKey: string, capabilityHandle: string, handler: EndpointHandler): void {
      const route: Route = { affordanceKey, capabilityHandle, handler };
      routes.set(routeKey(affordanceKey, capabilityHandle), route);
      register(route);
    },

    start(): void {
      if (!closed) return;
      closed = false;
      connect();
    },

    isReady,

    ready(timeoutMs: number): Promise<void> {
      if (isReady()) return Promise.resolve();
      return withDeadline(
        async (signal) => {
          while (!isReady()) await nextEvent(emitter, 'ready', signal);
        },
        timeoutMs,
        () => new Error(`spine client not registered on ${options.socketPath} within ${timeoutMs} ms`),
      );
    },

    async close(): Promise<void> {
      closed = true;
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer);
      reconnectTimer = undefined;
      const current = socket;
      socket = undefined;
      connected = false;
      if (current !== undefined && !current.destroyed) {
        await new Promise<void>((resolve) => {
          current.once('close', () => resolve());
          current.end();
          // A peer that never closes its half must not hold close() forever.
          setTimeout(() => current.destroy(), 1000).unref();
        });
      }
    },
  });
  return client;
}
