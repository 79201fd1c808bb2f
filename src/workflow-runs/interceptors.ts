/**
 * The interception layer (seed 004 §4), run by the core for each workflow
 * execution: request interceptors see the run's input before any node (so a
 * redacted value is never stored, traced or sent to a model), response
 * interceptors see every stream packet on its way to the client (and may drop
 * or rewrite it, or split it) and the run's result. The core runs them rather
 * than the llm-orchestrator because every packet passes through the core (LLM
 * tokens are forwarded from the provider, not from the sandbox) and because
 * the run record is the core's.
 *
 * An interceptor is the built-in `pii-redact` or a JIT component of the app,
 * run through the turn pipeline like any other component with this payload:
 *
 * | phase | payload | answer (generic result) |
 * | --- | --- | --- |
 * | request | `{interceptor: "request", context, input}` | `{input}` replaces the input; an error result aborts the run with it |
 * | response | `{interceptor: "response", context, packet}` | `{packet}` or `{packets: [...]}` replaces it, `{drop: true}` drops it |
 * | result | `{interceptor: "result", context, result}` | `{result}` replaces the result |
 *
 * An answer without the key leaves the value as it was. A response
 * interceptor that fails drops the packet (a redaction that did not run must
 * not let the text through) and the failure is logged.
 */
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { Logger } from '../logger.js';
import { redactPiiDeep, StreamRedactor } from './pii-redact.js';
import { StreamPacketSchema, type InterceptorContext, type StreamPacket } from '../contract/workflow/stream-packets.js';

/** Runs a JIT component of the run's app with `payload`; answers its generic result, throws its error. */
export type InvokeInterceptor = (component: string, payload: Record<string, unknown>) => Promise<unknown>;

export interface InterceptorChain {
  readonly context: InterceptorContext;
  /** True when any response interceptor is configured (otherwise packets pass as they are). */
  readonly intercepts: boolean;
  request(input: unknown): Promise<unknown>;
  packet(packet: StreamPacket): Promise<StreamPacket[]>;
  result(value: unknown): Promise<unknown>;
}

interface Interceptor {
  request(input: unknown): Promise<unknown>;
  packet(packet: StreamPacket): Promise<StreamPacket[]>;
  result(value: unknown): Promise<unknown>;
}

const checkPacket = TypeCompiler.Compile(StreamPacketSchema);

export interface InterceptorOptions {
  readonly context: InterceptorContext;
  readonly request: readonly string[];
  readonly response: readonly string[];
  readonly invoke: InvokeInterceptor;
  readonly logger: Logger;
}

/** The chain of one execution; stateful (pii-redact holds back the tails of streams). */
export function interceptorChain(options: InterceptorOptions): InterceptorChain {
  const make = (name: string): Interceptor => (name === 'pii-redact' ? piiRedact() : jitInterceptor(name, options));
  const request = options.request.map(make);
  const response = options.response.map(make);
  return {
    context: options.context,
    intercepts: response.length > 0,
    async request(input) {
      let value = input;
      for (const interceptor of request) value = await interceptor.request(value);
      return value;
    },
    async packet(packet) {
      let packets = [packet];
      for (const interceptor of response) {
        const next: StreamPacket[] = [];
        for (const item of packets) next.push(...(await interceptor.packet(item)));
        packets = next;
      }
      return packets;
    },
    async result(value) {
      let out = value;
      for (const interceptor of response) out = await interceptor.result(out);
      return out;
    },
  };
}

/** E-mail addresses, phone and card numbers out of the input, every chunk and the result. */
function piiRedact(): Interceptor {
  const streams = new Map<string, StreamRedactor>();
  return {
    request: async (input) => redactPiiDeep(input),
    result: async (value) => redactPiiDeep(value),
    async packet(packet) {
      if (packet.type === 'NODE_STREAM') {
        let redactor = streams.get(packet.stream_id);
        if (redactor === undefined) {
          redactor = new StreamRedactor();
          streams.set(packet.stream_id, redactor);
        }
        const chunk = redactor.push(packet.chunk ?? '');
        return chunk === '' ? [] : [{ ...packet, chunk }];
      }
      if (packet.type === 'STREAM_END') {
        const redactor = streams.get(packet.stream_id);
        streams.delete(packet.stream_id);
        const rest = redactor?.flush() ?? '';
        return rest === '' ? [packet] : [{ type: 'NODE_STREAM', stream_id: packet.stream_id, chunk: rest }, packet];
      }
      return [packet];
    },
  };
}

function jitInterceptor(component: string, options: InterceptorOptions): Interceptor {
  const { context, invoke, logger } = options;
  const answerOf = (value: unknown): Record<string, unknown> => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {});
  return {
    async request(input) {
      const answer = answerOf(await invoke(component, { interceptor: 'request', context, input }));
      return 'input' in answer ? answer['input'] : input;
    },
    async result(value) {
      const answer = answerOf(await invoke(component, { interceptor: 'result', context, result: value }));
      return 'result' in answer ? answer['result'] : value;
    },
    async packet(packet) {
      let answer: Record<string, unknown>;
      try {
        answer = answerOf(await invoke(component, { interceptor: 'response', context, packet }));
      } catch (error) {
        logger.warn({ err: error, interceptor: component, requestId: context.request_id }, 'response interceptor failed; the packet is dropped');
        return [];
      }
      if (answer['drop'] === true) return [];
      const replaced = Array.isArray(answer['packets']) ? answer['packets'] : 'packet' in answer ? [answer['packet']] : [packet];
      const valid = replaced.filter((item): item is StreamPacket => checkPacket.Check(item));
      if (valid.length !== replaced.length) logger.warn({ interceptor: component, requestId: context.request_id }, 'response interceptor answered packets that are not stream packets; they are dropped');
      return valid;
    },
  };
}
