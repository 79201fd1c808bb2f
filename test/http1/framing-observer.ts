/**
 * Sends the same bytes to node:http and to the core's own HTTP/1.1 server and
 * reports how each framed them: the requests its handler was given (method,
 * target, version, headers as node:http joins them, body bytes), in order, and
 * how the connection ended. Used by the differential framing test.
 */
import http from 'node:http';
import net from 'node:net';
import { Http1Server } from '../../src/shared/http1/http1-server.js';
import type { RequestLimits } from '../../src/shared/http1/request-parser.js';

export interface SeenRequest {
  readonly method: string;
  readonly target: string;
  readonly version: string;
  /** Lower-cased names; a repeated header as node:http joins it. */
  readonly headers: Readonly<Record<string, string>>;
  /** Latin-1, so that every byte shows. */
  readonly body: string;
}

/**
 * How the bytes after the last request handed over were taken: `refused` (an
 * error answer, or the connection dropped), `incomplete` (the client's end came
 * in the middle of a request), `clean` (nothing left, or only bytes after a
 * `connection: close`, which are not read).
 */
export type FramingEnd = 'clean' | 'incomplete' | 'refused';

export interface Framing {
  readonly requests: readonly SeenRequest[];
  readonly end: FramingEnd;
  /** What refused the bytes: node:http's error code or status, the core's status and message. */
  readonly reason?: string;
}

interface Recording {
  requests: (SeenRequest | undefined)[];
  end?: { end: FramingEnd; reason: string };
}

/** Per-case deadline: a server that never ends a connection the client has ended is a failure, not a hang. */
const CASE_DEADLINE_MS = 5_000;

/** The two servers, listening on loopback port 0; cases are sent one at a time. */
export class FramingObserver {
  private nodeRecording: Recording = { requests: [] };
  private coreRecording: Recording = { requests: [] };
  private nodePort = 0;
  private corePort = 0;

  private constructor(
    private readonly node: http.Server,
    private readonly core: Http1Server,
  ) {}

  static async start(limits: RequestLimits): Promise<FramingObserver> {
    // node:http with its default options, but the same head limit as the core's.
    const node = http.createServer({ maxHeaderSize: limits.maxHeadBytes });
    const core = new Http1Server({
      limits,
      onRequest: (request, respond) => {
        observer.coreRecording.requests.push({
          method: request.method,
          target: request.target,
          version: request.http10 ? '1.0' : '1.1',
          headers: { ...request.headers },
          body: request.body.toString('latin1'),
        });
        respond({ status: 200 });
      },
      onBadRequest: (error) => {
        // A client that ended its side in the middle of a request: node:http calls it HPE_INVALID_EOF_STATE.
        const incomplete = error.message === 'the connection ended in the middle of a request';
        observer.coreRecording.end ??= { end: incomplete ? 'incomplete' : 'refused', reason: `${error.status} ${error.message}` };
        return { status: error.status };
      },
    });
    const observer = new FramingObserver(node, core);
    node.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
      const recording = observer.nodeRecording;
      const index = recording.requests.push(undefined) - 1;
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(request.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value!;
        recording.requests[index] = {
          method: request.method!,
          target: request.url!,
          version: request.httpVersion,
          headers,
          body: Buffer.concat(chunks).toString('latin1'),
        };
        response.writeHead(200, { 'content-length': 0 });
        response.end();
      });
    });
    // node:http has no CONNECT handler: it drops the connection.
    node.on('connect', (_request: http.IncomingMessage, socket: net.Socket) => {
      observer.nodeRecording.end ??= { end: 'refused', reason: 'CONNECT (no handler)' };
      socket.destroy();
    });
    node.on('clientError', (error: Error & { code?: string }, socket: net.Socket) => {
      const code = error.code ?? 'unknown';
      // Bytes after `connection: close` are not read; the core ignores them just the same.
      const end: FramingEnd = code === 'HPE_INVALID_EOF_STATE' ? 'incomplete' : code === 'HPE_CLOSED_CONNECTION' ? 'clean' : 'refused';
      observer.nodeRecording.end ??= { end, reason: `${code} ${(error as { reason?: string }).reason ?? error.message}` };
      socket.destroy();
    });
    await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
    observer.nodePort = (node.address() as net.AddressInfo).port;
    observer.corePort = ((await core.listen({ host: '127.0.0.1', port: 0 })) as net.AddressInfo).port;
    return observer;
  }

  async close(): Promise<void> {
    await Promise.all([new Promise<void>((resolve) => this.node.close(() => resolve())), this.core.close()]);
  }

  /** Sends `bytes` to both servers (then ends the client's side), and reports how each framed them. */
  async frame(bytes: Buffer): Promise<{ node: Framing; core: Framing }> {
    this.nodeRecording = { requests: [] };
    this.coreRecording = { requests: [] };
    const [nodeAnswers] = await Promise.all([exchange(this.nodePort, bytes), exchange(this.corePort, bytes)]);
    // Handlers run before the answers they write; one more turn lets every callback of the closed sockets run.
    await new Promise((resolve) => setImmediate(resolve));
    const node = this.nodeRecording;
    // node:http answers some requests itself, without its handler: 400 for a missing Host, 417 for an unknown expectation.
    const own = [...nodeAnswers.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => match[1]).filter((status) => status !== '200' && status !== '100');
    if (own.length > 0) node.end ??= { end: 'refused', reason: `node:http answered ${own[0]}` };
    return { node: settle(node), core: settle(this.coreRecording) };
  }
}

function settle(recording: Recording): Framing {
  // A request whose body never ended was not handed over whole: it was cut short.
  const cut = recording.requests.indexOf(undefined);
  const requests = (cut === -1 ? recording.requests : recording.requests.slice(0, cut)) as SeenRequest[];
  const end = recording.end ?? { end: cut === -1 ? 'clean' : 'incomplete', reason: '' };
  return { requests, end: end.end, ...(end.reason !== '' ? { reason: end.reason } : {}) };
}

/** Writes the bytes, ends the client's side, and reads until the server closes; resolves with what it answered (Latin-1). */
function exchange(port: number, bytes: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let answers = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server on port ${port} did not end the connection within ${CASE_DEADLINE_MS} ms; it answered ${JSON.stringify(answers)}`));
    }, CASE_DEADLINE_MS);
    socket.on('data', (chunk: Buffer) => (answers += chunk.toString('latin1')));
    // A reset from a server that refused the bytes is one way of ending.
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answers);
    });
    socket.end(bytes);
  });
}
