/**
 * The core's HTTP connection to one sandbox runner: a keep-alive undici Client
 * on its Unix socket or loopback port. One client per sandbox, one request at a
 * time (the sandbox is leased), so there is no head-of-line blocking to manage.
 */
import { Client, errors as undiciErrors } from 'undici';
import { EXECUTE_PATH, REQUEST_ID_HEADER } from '../contract/execute-contract.js';
import type { SandboxEndpoint } from './sandbox-driver.js';

export interface RawResponse {
  status: number;
  body: Buffer;
}

/** Why a call to the runner did not produce an HTTP answer. */
export type TransportFailure = 'timeout' | 'connect' | 'dropped';

export class SandboxTransportError extends Error {
  constructor(
    readonly failure: TransportFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SandboxTransportError';
  }
}

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'UND_ERR_CONNECT_TIMEOUT', 'EACCES']);

export class SandboxClient {
  private readonly client: Client;

  constructor(endpoint: SandboxEndpoint) {
    const common = { keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000, pipelining: 1, connectTimeout: 2_000 };
    this.client =
      endpoint.kind === 'unix'
        ? new Client('http://sandbox', { ...common, socketPath: endpoint.socketPath })
        : new Client(`http://${endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host}:${endpoint.port}`, common);
  }

  /** Sends one /execute. Rejects with SandboxTransportError when no HTTP answer arrives in time. */
  async execute(body: string, requestId: string, timeoutMs: number, traceId?: string): Promise<RawResponse> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json',
      [REQUEST_ID_HEADER]: requestId,
    };
    if (traceId) headers['x-trace-id'] = traceId;
    return this.request('POST', EXECUTE_PATH, headers, body, timeoutMs);
  }

  /** GET /healthz; true when the runner answers 200 in time. */
  async probe(timeoutMs: number): Promise<boolean> {
    try {
      const response = await this.request('GET', '/healthz', {}, undefined, timeoutMs);
      return response.status === 200;
    } catch {
      return false;
    }
  }

  close(): void {
    this.client.destroy().catch(() => undefined);
  }

  private async request(
    method: 'GET' | 'POST',
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
    timeoutMs: number,
  ): Promise<RawResponse> {
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const response = await this.client.request({ method, path, headers, body, signal, headersTimeout: 0, bodyTimeout: 0 });
      const chunks: Buffer[] = [];
      for await (const chunk of response.body) chunks.push(chunk as Buffer);
      return { status: response.statusCode, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) };
    } catch (error) {
      if (signal.aborted) throw new SandboxTransportError('timeout', `no answer within ${timeoutMs} ms`, { cause: error });
      const code = (error as { code?: string }).code;
      if (code && CONNECT_CODES.has(code)) throw new SandboxTransportError('connect', `cannot connect: ${code}`, { cause: error });
      if (error instanceof undiciErrors.UndiciError || code) {
        throw new SandboxTransportError('dropped', `connection dropped: ${code ?? (error as Error).message}`, { cause: error });
      }
      throw error;
    }
  }
}
