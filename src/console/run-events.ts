/**
 * A run's live stream for the console: server-sent events that follow the
 * run's record in the runtime store, so a run driven by any core (on Redis,
 * another replica, or a core that took over after a restart) streams the same.
 * The record's version is read every POLL_MS; each change sends the run and
 * its trace (`event: run`), and a run that ended sends `event: end` and the
 * stream closes. A stream lives at most MAX_STREAM_MS (the page reconnects),
 * with a comment line every KEEPALIVE_MS through idle proxies.
 *
 * The page reads it with fetch() rather than EventSource: EventSource cannot
 * send the `x-uhlp-console` header the console API requires.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FINAL_RUN_STATUSES } from '../contract/workflow/run-summary.js';
import type { Logger } from '../logger.js';
import type { RunStore } from '../state/run-store.js';
import type { RunViews } from '../workflow-runs/run-views.js';

export interface RunEventsOptions {
  readonly id: string;
  readonly runs: Pick<RunStore, 'getRun'>;
  readonly workflows: Pick<RunViews, 'view' | 'trace' | 'pendingGrants'>;
  readonly logger: Logger;
  /** How often the record's version is read, ms. @defaultValue POLL_MS */
  readonly pollMs?: number;
}

const POLL_MS = 250;
const KEEPALIVE_MS = 15_000;
const MAX_STREAM_MS = 10 * 60_000;
const FINAL: ReadonlySet<string> = new Set(FINAL_RUN_STATUSES);

export async function streamRunEvents(request: FastifyRequest, reply: FastifyReply, options: RunEventsOptions): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    // Proxies that buffer answers (nginx) would hold every event until the end.
    'x-accel-buffering': 'no',
  });
  let closed = false;
  request.raw.once('close', () => (closed = true));
  raw.once('close', () => (closed = true));
  const send = (event: string, data: unknown): void => {
    if (!closed) raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  const started = Date.now();
  let lastVersion = -1;
  let lastWrite = Date.now();
  const pollMs = options.pollMs ?? POLL_MS;
  try {
    while (!closed) {
      const stored = await options.runs.getRun(options.id);
      if (stored === undefined) {
        send('end', { reason: 'gone' });
        break;
      }
      if (stored.version !== lastVersion) {
        lastVersion = stored.version;
        const [run, trace, grants] = await Promise.all([options.workflows.view(options.id), options.workflows.trace(options.id), options.workflows.pendingGrants(options.id)]);
        send('run', { version: stored.version, run, trace, grants });
        lastWrite = Date.now();
        if (FINAL.has(String(run['status']))) {
          send('end', { reason: 'ended', status: run['status'] });
          break;
        }
      }
      if (Date.now() - started > MAX_STREAM_MS) {
        send('end', { reason: 'reconnect' });
        break;
      }
      if (Date.now() - lastWrite > KEEPALIVE_MS && !closed) {
        raw.write(': keepalive\n\n');
        lastWrite = Date.now();
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  } catch (error) {
    options.logger.warn({ err: error, runId: options.id }, 'a console run stream ended on an error');
    send('end', { reason: 'error' });
  } finally {
    if (!raw.writableEnded) raw.end();
  }
}
