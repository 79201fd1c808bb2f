/**
 * A streamed chat completion (`stream: true`) assembled into one result. The
 * body is server-sent events: `data: <chunk JSON>` events, each a
 * `chat.completion.chunk` whose `choices[0].delta` carries a piece of the text
 * or pieces of tool calls (keyed by `index`: the first piece of a call has its
 * id and name, the next ones more of its arguments), the last one with
 * `finish_reason`; with `stream_options.include_usage` a final chunk with no
 * choices carries the usage; `data: [DONE]` ends the stream.
 *
 * Bytes are fed as they arrive; events may be split anywhere, even inside a
 * UTF-8 sequence. Lines end in LF, CRLF or CR, as the SSE format allows.
 */
import { UhlpError } from '../shared/errors.js';
import type { LlmUsage } from '../contract/llm-messages.js';
import type { LlmGenerateResult, NormalizedLlmRequest } from './llm-provider.js';
import { completionResult, readUsage, toolCall, upstreamMessage } from './openai-chat-wire.js';

interface PartialToolCall {
  id?: string;
  name?: string;
  arguments: string;
}

/** An SSE line longer than this is not a chunk of a chat completion. */
const MAX_LINE_CHARS = 4 * 1024 * 1024;

export class ChatCompletionStream {
  private readonly decoder = new TextDecoder('utf-8');
  private buffered = '';
  private data: string[] = [];
  private text = '';
  private sawContent = false;
  private readonly calls = new Map<number, PartialToolCall>();
  private finishReason: string | undefined;
  private model: string | undefined;
  private usage: LlmUsage | undefined;
  private done = false;
  private chunks = 0;

  constructor(
    private readonly request: NormalizedLlmRequest,
    private readonly redact: (text: string) => string,
    /** Told each piece of text as it arrives. @defaultValue none */
    private readonly onDelta?: (text: string) => void,
  ) {}

  /** Feeds bytes of the body. Throws UHLP_LLM_BAD_RESPONSE on a chunk that is not JSON, UHLP_LLM_UPSTREAM_ERROR on an error event. */
  push(bytes: Uint8Array): void {
    this.feed(this.decoder.decode(bytes, { stream: true }));
  }

  /** The body ended: the assembled result, or UHLP_LLM_BAD_RESPONSE when the stream was cut before its end. */
  end(): LlmGenerateResult {
    this.feed(`${this.decoder.decode()}\n\n`);
    if (!this.done && this.finishReason === undefined) {
      throw new UhlpError('UHLP_LLM_BAD_RESPONSE', `LLM provider stream ended before its last chunk (${this.chunks} chunks read)`, {
        upstreamMessage: this.redact(this.text.slice(0, 500)),
      });
    }
    const redactedBody = (): string => this.redact(this.text.slice(0, 500));
    const toolCalls = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call], position) => toolCall(position, call.id, call.name, call.arguments, () => `${redactedBody()} (tool call index ${index})`));
    return completionResult(
      { content: this.sawContent ? this.text : null, toolCalls, finishReason: this.finishReason, model: this.model, usage: this.usage },
      this.request,
      redactedBody,
    );
  }

  private feed(text: string): void {
    this.buffered += text;
    let start = 0;
    for (;;) {
      const end = lineEnd(this.buffered, start);
      if (end === -1) break;
      const line = this.buffered.slice(start, end);
      // CRLF counts as one line end; a lone CR or LF as one too.
      start = this.buffered[end] === '\r' && this.buffered[end + 1] === '\n' ? end + 2 : end + 1;
      this.line(line);
    }
    this.buffered = this.buffered.slice(start);
    if (this.buffered.length > MAX_LINE_CHARS) {
      throw new UhlpError('UHLP_LLM_BAD_RESPONSE', `LLM provider stream has a line over ${MAX_LINE_CHARS} characters`, {});
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0) this.event(this.data.join('\n'));
      this.data = [];
      return;
    }
    // Comments (": keep-alive") and the fields other than data (event, id, retry) say nothing about the completion.
    if (!line.startsWith('data:')) return;
    this.data.push(line.slice(line[5] === ' ' ? 6 : 5));
  }

  private event(data: string): void {
    if (this.done) return;
    if (data.trim() === '[DONE]') {
      this.done = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new UhlpError('UHLP_LLM_BAD_RESPONSE', 'LLM provider stream has a chunk that is not JSON', { upstreamMessage: this.redact(data.slice(0, 500)) });
    }
    if (typeof chunk !== 'object' || chunk === null) {
      throw new UhlpError('UHLP_LLM_BAD_RESPONSE', 'LLM provider stream has a chunk that is not an object', { upstreamMessage: this.redact(data.slice(0, 500)) });
    }
    this.chunks += 1;
    const record = chunk as { error?: unknown; model?: unknown; usage?: unknown; choices?: unknown };
    if (record.error !== undefined) {
      // vLLM and others report a failure that happens after the headers as an event of the stream.
      throw new UhlpError('UHLP_LLM_UPSTREAM_ERROR', 'LLM provider failed in the middle of its stream', { upstreamMessage: this.redact(upstreamMessage(data)) });
    }
    if (typeof record.model === 'string' && record.model !== '') this.model = record.model;
    const usage = readUsage(record.usage);
    if (usage !== undefined) this.usage = usage;
    const choice = Array.isArray(record.choices) ? (record.choices[0] as { delta?: unknown; finish_reason?: unknown } | undefined) : undefined;
    if (choice === undefined) return;
    if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') this.finishReason = choice.finish_reason;
    const delta = (typeof choice.delta === 'object' && choice.delta !== null ? choice.delta : {}) as { content?: unknown; tool_calls?: unknown };
    if (typeof delta.content === 'string') {
      this.text += delta.content;
      this.sawContent = true;
      if (delta.content !== '') this.onDelta?.(delta.content);
    }
    if (Array.isArray(delta.tool_calls)) delta.tool_calls.forEach((piece: unknown, position) => this.toolCallPiece(piece, position));
  }

  private toolCallPiece(piece: unknown, position: number): void {
    const record = (typeof piece === 'object' && piece !== null ? piece : {}) as {
      index?: unknown;
      id?: unknown;
      function?: { name?: unknown; arguments?: unknown };
    };
    // Servers that send whole calls in one chunk sometimes leave the index out: the position is the index then.
    const index = typeof record.index === 'number' && Number.isInteger(record.index) && record.index >= 0 ? record.index : position;
    let call = this.calls.get(index);
    if (call === undefined) {
      call = { arguments: '' };
      this.calls.set(index, call);
    }
    if (typeof record.id === 'string' && record.id !== '') call.id ??= record.id;
    const name = record.function?.name;
    if (typeof name === 'string' && name !== '') call.name ??= name;
    const args = record.function?.arguments;
    if (typeof args === 'string') call.arguments += args;
    else if (typeof args === 'object' && args !== null) call.arguments += JSON.stringify(args);
  }
}

function lineEnd(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) return i;
    // A CR at the very end may be the first half of a CRLF still on its way.
    if (c === 13) return i + 1 < text.length ? i : -1;
  }
  return -1;
}
