/**
 * The structured logger every module takes. It is pino, the logger fastify uses,
 * so that request logs and pool logs share one stream and one format.
 */
import { pino, type Logger as PinoLogger } from 'pino';
import { activeTraceIds } from './tracing/spans.js';

export type Logger = PinoLogger;

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export function createLogger(level: LogLevel = 'info'): Logger {
  // Logs go to stderr, so stdout stays for what a command prints (URLs, JSON).
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime, mixin: traceMixin }, pino.destination({ fd: 2, sync: true }));
}

/**
 * A line logged while a traced turn runs carries its `trace_id` and `span_id`, next to the request id
 * the line names. A new object each time: pino merges the line's fields into what this returns.
 */
function traceMixin(): object {
  return activeTraceIds() ?? {};
}

/** A logger that drops everything; for unit tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
