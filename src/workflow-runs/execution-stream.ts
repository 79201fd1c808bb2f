/**
 * The stream of one execution, as the HTTP source writes it to a client that
 * asked for `Accept: text/event-stream`: every packet the execution emits
 * (through `core.workflow.emit`, with a checkpoint, or as LLM tokens forwarded
 * by `core.llm.generate`) passes the response interceptors in arrival order
 * and becomes a server-sent event; the answer of the turn is the last event.
 *
 * ```text
 * event: STREAM_START
 * data: {"stream_id":"default","content_type":"text/plain"}
 *
 * event: NODE_STREAM
 * data: {"stream_id":"default","node":"answer","chunk":"Hel"}
 *
 * event: STREAM_END
 * data: {"stream_id":"default"}
 *
 * event: RESULT
 * data: {"status":200,"headers":{"content-type":"application/json; charset=utf-8"},"body":{"answer":"..."}}
 * ```
 *
 * The lifecycle is kept whatever the emitter does: a chunk of a stream that was
 * not started starts it (`text/plain` unless the chunk's emitter named a type),
 * a second start or an end of a stream not open is dropped, and every stream
 * still open when the answer comes is ended before it.
 *
 * With a secret scrubber, every event is scrubbed as it is written, and each
 * stream's chunks as one text (stream-scrubber.ts): a value a model or a
 * script emits across two chunks is replaced too, the piece that may begin it
 * held back until the next chunk (or the stream's end) tells.
 */
import { KeyedSemaphore } from '../shared/keyed-semaphore.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets/secret-scrubber.js';
import { StreamScrubber } from '../secrets/stream-scrubber.js';
import type { InterceptorChain } from './interceptors.js';
import { DEFAULT_CONTENT_TYPE, type StreamPacket } from '../contract/workflow/stream-packets.js';

/** What the turn answered, as the RESULT event carries it. */
export interface StreamResult {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | readonly string[]>>;
  readonly body: string | Buffer;
}

/** Bytes of events held for a client that reads slower than the execution writes; past it, chunks are dropped (and counted). */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/** Headers of the answer the RESULT event repeats. */
const RESULT_HEADERS = ['content-type', 'location', 'retry-after', 'x-uhlp-run-id', 'x-uhlp-session-id', 'x-uhlp-turn'];

export class ExecutionStream {
  /** Streams started (before interception) and not ended. */
  private readonly announced = new Map<string, string>();
  private chain: InterceptorChain | undefined;
  /** Events are written one task at a time, in the order they came. */
  private readonly queue = new KeyedSemaphore();
  private readonly events: string[] = [];
  private buffered = 0;
  private dropped = 0;
  private wake: (() => void) | undefined;
  private finished = false;
  private closed = false;
  /** Tasks queued and not done. */
  private pending = 0;
  /** Each open stream's chunks, scrubbed as one text. */
  private readonly scrubbed = new Map<string, StreamScrubber>();

  constructor(
    private readonly logger: Logger,
    private readonly scrubber?: SecretScrubber,
  ) {}

  /** The response interceptors of the run (known once the workflow is). */
  useInterceptors(chain: InterceptorChain): void {
    this.chain = chain;
  }

  /** The client is gone: nothing more is written or kept. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** One packet from the execution. */
  packet(packet: StreamPacket): void {
    if (this.finished || this.closed) return;
    const normalized: StreamPacket[] = [];
    if (packet.type === 'STREAM_START') {
      if (this.announced.has(packet.stream_id)) return;
      const contentType = packet.content_type ?? DEFAULT_CONTENT_TYPE;
      this.announced.set(packet.stream_id, contentType);
      normalized.push({ ...packet, content_type: contentType });
    } else if (packet.type === 'NODE_STREAM') {
      if (!this.announced.has(packet.stream_id)) {
        const contentType = packet.content_type ?? DEFAULT_CONTENT_TYPE;
        this.announced.set(packet.stream_id, contentType);
        normalized.push({ type: 'STREAM_START', stream_id: packet.stream_id, content_type: contentType, ...(packet.node !== undefined ? { node: packet.node } : {}) });
      }
      const { content_type: _ignored, ...chunk } = packet;
      normalized.push(chunk);
    } else {
      if (!this.announced.has(packet.stream_id)) return;
      this.announced.delete(packet.stream_id);
      normalized.push({ type: 'STREAM_END', stream_id: packet.stream_id });
    }
    this.enqueue(normalized);
  }

  /** A piece of an LLM's text, as the provider produced it. */
  delta(streamId: string, node: string | undefined, text: string, contentType?: string): void {
    if (text === '') return;
    this.packet({ type: 'NODE_STREAM', stream_id: streamId, chunk: text, ...(node !== undefined ? { node } : {}), ...(contentType !== undefined ? { content_type: contentType } : {}) });
  }

  /** Ends the open streams, then writes the answer and ends the event stream. */
  finish(result: StreamResult): void {
    if (this.finished) return;
    for (const streamId of [...this.announced.keys()]) this.packet({ type: 'STREAM_END', stream_id: streamId });
    this.finished = true;
    this.schedule(() => {
      const headers: Record<string, string | readonly string[]> = {};
      for (const name of RESULT_HEADERS) if (result.headers[name] !== undefined) headers[name] = result.headers[name]!;
      const text = Buffer.isBuffer(result.body) ? result.body.toString('utf8') : result.body;
      let body: unknown = text;
      if (String(result.headers['content-type'] ?? '').includes('json')) {
        try {
          body = JSON.parse(text);
        } catch {
          // Sent as the text it is.
        }
      }
      this.write('RESULT', { status: result.status, headers, body, ...(this.dropped > 0 ? { droppedChunks: this.dropped } : {}) });
    });
  }

  /** The client went away. */
  close(): void {
    this.closed = true;
    this.events.length = 0;
    this.wake?.();
  }

  /** The event stream's text, as it becomes available; ends after RESULT (or when the client is gone). */
  async *text(): AsyncGenerator<string> {
    for (;;) {
      if (this.events.length > 0) {
        const batch = this.events.splice(0, this.events.length).join('');
        this.buffered = 0;
        yield batch;
        continue;
      }
      if (this.closed || (this.finished && this.pending === 0)) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  /**
   * Writes the events of one packet (a first piece and the start it implies)
   * in one task: a waiting reader gets them in one batch, and the client in
   * one write, rather than the piece a write after its start.
   */
  private enqueue(packets: readonly StreamPacket[]): void {
    const chain = this.chain;
    this.schedule(async () => {
      for (const packet of packets) {
        let out: StreamPacket[];
        try {
          out = chain !== undefined && chain.intercepts ? await chain.packet(packet) : [packet];
        } catch (error) {
          this.logger.warn({ err: error }, 'a response interceptor failed; the packet is dropped');
          out = [];
        }
        for (const item of out) this.writePacket(item);
      }
    });
  }

  /** Runs `task` after every task queued before it; the reader is woken when it is done. */
  private schedule(task: () => Promise<void> | void): void {
    this.pending += 1;
    void this.queue.run('events', async () => {
      try {
        if (!this.closed) await task();
      } catch (error) {
        this.logger.warn({ err: error }, 'a stream event was not written');
      } finally {
        this.pending -= 1;
        this.wake?.();
      }
    });
  }

  /** A packet as its event, its chunk scrubbed with those before it; a stream's end first sends what was held back. */
  private writePacket(packet: StreamPacket): void {
    const scrubber = this.scrubber;
    if (scrubber === undefined || !scrubber.active) return this.write(packet.type, eventData(packet));
    if (packet.type === 'NODE_STREAM' && packet.chunk !== undefined) {
      let stream = this.scrubbed.get(packet.stream_id);
      if (stream === undefined) this.scrubbed.set(packet.stream_id, (stream = new StreamScrubber(scrubber)));
      const chunk = stream.push(packet.chunk);
      if (chunk !== '') this.write(packet.type, eventData({ ...packet, chunk }));
      return;
    }
    if (packet.type === 'STREAM_END') {
      const rest = this.scrubbed.get(packet.stream_id)?.end() ?? '';
      this.scrubbed.delete(packet.stream_id);
      if (rest !== '') this.write('NODE_STREAM', { stream_id: packet.stream_id, chunk: rest });
    }
    this.write(packet.type, eventData(packet));
  }

  private write(event: string, data: unknown): void {
    if (this.closed) return;
    const json = JSON.stringify(data);
    const text = `event: ${event}\ndata: ${this.scrubber?.active === true ? this.scrubber.scrub(json) : json}\n\n`;
    if (event === 'NODE_STREAM' && this.buffered + text.length > MAX_BUFFERED_BYTES) {
      this.dropped += 1;
      return;
    }
    this.buffered += text.length;
    this.events.push(text);
  }
}

function eventData(packet: StreamPacket): Record<string, unknown> {
  const { type: _type, ...data } = packet;
  return data;
}
