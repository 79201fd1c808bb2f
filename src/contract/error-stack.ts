/**
 * Where a script threw, as both sides of the /execute contract bound it: the
 * runners write `ErrorData.stack` (frames of the script's own files only, with
 * paths relative to the app directory, most recent first, one
 * `at <function> (<path>:<line>[:<column>])` per line), and the core bounds it
 * again before it logs it or keeps it in a dead letter, since a sandbox's
 * answer is not trusted. The stack is for operators (logs, dead letters); a
 * client sees it only where a dev setting asks (UHLP_DEV_ERROR_STACKS).
 */

/** Frames kept of a stack; the frames nearest the throw. */
export const MAX_ERROR_STACK_FRAMES = 20;
/** Characters kept of a stack (its frames joined). */
export const MAX_ERROR_STACK_CHARS = 4096;
/** Characters kept of a script exception's message. */
export const MAX_ERROR_MESSAGE_CHARS = 2048;
/** Characters kept of one frame's function name. */
const MAX_FUNCTION_CHARS = 200;

/** C0 and C1 controls (and DEL): what could move a terminal's cursor or end a log line. */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** `text` without control characters (each one a U+FFFD) and at most `max` characters (cut with an ellipsis). */
export function neutralText(text: string, max: number): string {
  const clean = text.replace(CONTROLS, '\uFFFD');
  return clean.length <= max ? clean : `${clean.slice(0, max - 1)}…`;
}

/** One frame of a script's stack, its path relative to the app directory. */
export interface ScriptFrame {
  /** The function, when it has a name. */
  readonly fn?: string;
  readonly file: string;
  readonly line: number;
  readonly column?: number;
}

/** The frames as the contract's `stack` text: at most MAX_ERROR_STACK_FRAMES lines and MAX_ERROR_STACK_CHARS characters; undefined for none. */
export function formatFrames(frames: readonly ScriptFrame[]): string | undefined {
  const lines: string[] = [];
  let chars = 0;
  for (const frame of frames.slice(0, MAX_ERROR_STACK_FRAMES)) {
    const place = `${neutralText(frame.file, 512)}:${frame.line}${frame.column !== undefined ? `:${frame.column}` : ''}`;
    const line = frame.fn ? `at ${neutralText(frame.fn, MAX_FUNCTION_CHARS)} (${place})` : `at ${place}`;
    if (chars + line.length + 1 > MAX_ERROR_STACK_CHARS) break;
    lines.push(line);
    chars += line.length + 1;
  }
  return lines.length > 0 ? lines.join('\n') : undefined;
}

/**
 * A stack as a sandbox sent it, bounded again by the core: controls but line
 * breaks neutralised, at most MAX_ERROR_STACK_FRAMES lines and
 * MAX_ERROR_STACK_CHARS characters; undefined when there is none.
 */
export function boundStack(stack: unknown): string | undefined {
  if (typeof stack !== 'string' || stack.length === 0) return undefined;
  const text = stack
    .slice(0, MAX_ERROR_STACK_CHARS * 2)
    .split('\n')
    .slice(0, MAX_ERROR_STACK_FRAMES)
    .map((line) => neutralText(line, 1024))
    .filter((line) => line.trim() !== '')
    .join('\n');
  if (text === '') return undefined;
  return text.length <= MAX_ERROR_STACK_CHARS ? text : `${text.slice(0, MAX_ERROR_STACK_CHARS - 1)}…`;
}
