/**
 * Reads the body of a request to the MCP endpoint within the endpoint's own
 * limit (mcp-limits.ts), as fastify's content-type parser of the /mcp route.
 *
 * A body past the limit is still read to its end, and dropped; the handler then
 * answers `413 UHLP_BODY_TOO_LARGE` on a connection that stays usable. Why not
 * fastify's own limit: it answers as soon as the Content-Length is over, and
 * closes the connection, while the client (a runner, which sends its whole
 * request before it reads) is still writing; the client then sees a broken
 * pipe, not the answer, and a tool call fails 502 instead of 413. The core's
 * TCP listener does the same for its own 413s (it keeps reading what the client
 * sends after the answer). How long a client may go on sending is bounded by
 * node:http's request timeout.
 */
import type { FastifyRequest } from 'fastify';

/** What the parser gives the handler instead of a body over the limit. */
export class McpBodyTooLarge {
  constructor(
    /** Bytes the client sent. */
    readonly bytes: number,
    /** The endpoint's limit. */
    readonly limitBytes: number,
  ) {}
}

type Done = (error: Error | null, body?: Buffer | McpBodyTooLarge) => void;

/** A fastify content-type parser: the body as a Buffer, or McpBodyTooLarge once it has all been read. */
export function mcpBodyParser(limitBytes: number): (request: FastifyRequest, payload: NodeJS.ReadableStream, done: Done) => void {
  return (_request, payload, done) => {
    let chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limitBytes) chunks.push(chunk);
      // Past the limit nothing is kept: the rest only has to be read.
      else if (chunks.length > 0) chunks = [];
    };
    const onEnd = (): void => {
      cleanup();
      done(null, size > limitBytes ? new McpBodyTooLarge(size, limitBytes) : Buffer.concat(chunks, size));
    };
    const onError = (error: Error): void => {
      cleanup();
      done(error);
    };
    const cleanup = (): void => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onError);
    };
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onError);
  };
}
