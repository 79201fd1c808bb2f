/**
 * Async invocations of HTTP routes: a request with `Prefer: respond-async` is
 * answered `202 Accepted` with `Location: /_uhlp/invocations/<id>` at once, its
 * turn runs in the background, and its answer is kept in the delivery store
 * for a TTL, where `GET /_uhlp/invocations/<id>` fetches it (from any core on
 * the same Redis). The id is 128 random bits: knowing it is what lets one read
 * the answer, as knowing a request's answer would.
 *
 * A core that stops waits (bounded) for the invocations it runs; one that dies
 * leaves them `running` until the TTL (no redelivery: HTTP is not a queue).
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { UhlpError } from '../../shared/errors.js';
import { drain } from '../../shared/deadline.js';
import type { FinalResponse } from '../../execution/result-interpreter.js';
import type { Logger } from '../../logger.js';
import type { DeliveryStore } from '../../state/delivery-store.js';

export const INVOCATIONS_PATH = '/_uhlp/invocations';

/** Whether a Prefer header asks for an async answer (RFC 7240). */
export function prefersAsync(header: string | string[] | undefined): boolean {
  const values = Array.isArray(header) ? header : header === undefined ? [] : [header];
  return values.some((value) => value.split(',').some((preference) => preference.split(';')[0]!.trim().toLowerCase() === 'respond-async'));
}

interface InvocationRecord {
  state: 'running' | 'completed' | 'failed';
  startedAt: string;
  completedAt?: string;
  response?: { status: number; headers: Record<string, string | string[]>; body: string; bodyEncoding: 'utf8' | 'base64' };
}

export interface AsyncInvocationsOptions {
  readonly store: DeliveryStore;
  readonly logger: Logger;
  /** How long a result is kept, ms. */
  readonly ttlMs: number;
}

export class AsyncInvocations {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly options: AsyncInvocationsOptions) {}

  /** Records the invocation as running and starts `run` (given the id) in the background; returns its id. */
  async start(run: (id: string) => Promise<FinalResponse>): Promise<string> {
    const id = randomBytes(16).toString('base64url');
    const startedAt = new Date().toISOString();
    await this.put(id, { state: 'running', startedAt });
    const task = run(id)
      .then((final) => this.put(id, { state: 'completed', startedAt, completedAt: new Date().toISOString(), response: toRecorded(final) }))
      .catch((error: unknown) => this.options.logger.error({ err: error, invocationId: id }, 'async invocation result not stored'))
      .finally(() => this.running.delete(task));
    this.running.add(task);
    return id;
  }

  /** Waits (bounded) for the invocations this core runs. */
  async drain(waitMs: number): Promise<void> {
    await drain([...this.running], waitMs);
  }

  register(app: FastifyInstance): void {
    app.get<{ Params: { id: string } }>(`${INVOCATIONS_PATH}/:id`, async (request, reply) => {
      const { id } = request.params;
      const json = /^[A-Za-z0-9_-]{1,64}$/.test(id) ? await this.options.store.getInvocation(id) : undefined;
      if (json === undefined) throw new UhlpError('UHLP_INVOCATION_NOT_FOUND', `no invocation "${id.slice(0, 64)}" (unknown, or past its TTL)`, { field: 'id' });
      const record = JSON.parse(json) as InvocationRecord;
      if (record.state === 'running') reply.code(202).header('retry-after', '1');
      return reply.send({ invocationId: id, ...record });
    });
  }

  private put(id: string, record: InvocationRecord): Promise<void> {
    return this.options.store.putInvocation(id, JSON.stringify(record), this.options.ttlMs);
  }
}

function toRecorded(final: FinalResponse): InvocationRecord['response'] {
  const body = typeof final.body === 'string' ? Buffer.from(final.body) : final.body;
  const utf8 = body.length === 0 || Buffer.from(body.toString('utf8')).equals(body);
  return { status: final.status, headers: final.headers, body: utf8 ? body.toString('utf8') : body.toString('base64'), bodyEncoding: utf8 ? 'utf8' : 'base64' };
}
