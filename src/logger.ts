/**
 * The structured logger every module takes. It is pino, the logger fastify uses,
 * so that request logs and pool logs share one stream and one format.
 */
import { pino, type Logger as PinoLogger } from 'pino';
import { activeTraceIds } from './tracing/spans.js';

export type Logger = PinoLogger;

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** What a log line passes through last: the secret scrubber (secrets/secret-scrubber.ts). */
export interface LineScrubber {
  readonly active: boolean;
  scrub(text: string): string;
}

export function createLogger(level: LogLevel = 'info', scrubber?: LineScrubber): Logger {
  // Logs go to stderr, so stdout stays for what a command prints (URLs, JSON).
  return pino(
    {
      level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: traceMixin,
      // The whole serialized line, so a value in any field, message or error stack is caught.
      ...(scrubber !== undefined ? { hooks: { streamWrite: (line: string) => (scrubber.active ? scrubber.scrub(line) : line) } } : {}),
    },
    pino.destination({ fd: 2, sync: true }),
  );
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
