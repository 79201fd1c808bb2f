import { describe, expect, it } from 'vitest';
import { silentLogger } from '../logger.js';
import { SecretScrubber } from '../secrets/secret-scrubber.js';
import { ExecutionStream } from './execution-stream.js';
import type { InterceptorChain } from './interceptors.js';

/** The events of one batch the reader got, by name. */
const names = (batch: string): string[] => [...batch.matchAll(/^event: (\w+)$/gm)].map((match) => match[1]!);

describe('ExecutionStream', () => {
  it("gives a stream's first piece to a waiting reader in one batch with the start it implies", async () => {
    const stream = new ExecutionStream(silentLogger());
    const reader = stream.text();
    const first = reader.next();
    stream.packet({ type: 'NODE_STREAM', stream_id: 'default', node: 'say', chunk: 'Hel' });
    const batch = (await first).value as string;
    expect(names(batch)).toEqual(['STREAM_START', 'NODE_STREAM']);
    stream.finish({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' });
    const rest: string[] = [];
    for await (const more of reader) rest.push(...names(more));
    expect(rest).toEqual(['STREAM_END', 'RESULT']);
  });

  it('passes each packet through the response interceptors in order, a dropped one dropped alone', async () => {
    const stream = new ExecutionStream(silentLogger());
    const seen: string[] = [];
    stream.useInterceptors({
      intercepts: true,
      packet: async (packet: { type: string; chunk?: string }) => {
        seen.push(packet.type);
        // A slow interceptor for the start: the piece still comes after it.
        if (packet.type === 'STREAM_START') await new Promise((resolve) => setTimeout(resolve, 5));
        if (packet.chunk === 'drop') throw new Error('refused');
        return [packet.chunk !== undefined ? { ...packet, chunk: packet.chunk.toUpperCase() } : packet];
      },
    } as unknown as InterceptorChain);
    const reader = stream.text();
    stream.packet({ type: 'NODE_STREAM', stream_id: 'default', chunk: 'hel' });
    stream.packet({ type: 'NODE_STREAM', stream_id: 'default', chunk: 'drop' });
    stream.packet({ type: 'NODE_STREAM', stream_id: 'default', chunk: 'lo' });
    stream.finish({ status: 200, headers: {}, body: 'done' });
    let text = '';
    for await (const batch of reader) text += batch;
    expect(names(text)).toEqual(['STREAM_START', 'NODE_STREAM', 'NODE_STREAM', 'STREAM_END', 'RESULT']);
    expect([...text.matchAll(/"chunk":"(\w+)"/g)].map((match) => match[1])).toEqual(['HEL', 'LO']);
    expect(seen).toEqual(['STREAM_START', 'NODE_STREAM', 'NODE_STREAM', 'NODE_STREAM', 'STREAM_END']);
  });

  it('scrubs a secret value split across two chunks, and one whole in the answer, keeping the rest of the text', async () => {
    const scrubber = new SecretScrubber();
    scrubber.addSource('test', () => [{ name: 'api-key', value: 'canary-streamed-42' }]);
    const stream = new ExecutionStream(silentLogger(), scrubber);
    const reader = stream.text();
    for (const chunk of ['The key is cana', 'ry-strea', 'med-42, and the ', 'can', 'not be seen.']) stream.packet({ type: 'NODE_STREAM', stream_id: 'default', chunk });
    // A stream still open when the answer comes: what it held back is sent before its end.
    stream.packet({ type: 'NODE_STREAM', stream_id: 'other', chunk: 'ends on canary-' });
    stream.finish({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"said":"canary-streamed-42"}' });
    let text = '';
    for await (const batch of reader) text += batch;
    expect(text).not.toContain('canary-streamed-42');
    const chunks = (id: string): string =>
      [...text.matchAll(/^data: (.*)$/gm)]
        .map((match) => JSON.parse(match[1]!) as { stream_id?: string; chunk?: string })
        .filter((data) => data.stream_id === id && data.chunk !== undefined)
        .map((data) => data.chunk)
        .join('');
    expect(chunks('default')).toBe('The key is [secret:api-key], and the cannot be seen.');
    expect(chunks('other')).toBe('ends on canary-');
    expect(text).toContain('"body":{"said":"[secret:api-key]"}');
    expect(names(text).slice(-4)).toEqual(['STREAM_END', 'NODE_STREAM', 'STREAM_END', 'RESULT']);
  });
});
