/**
 * Where a script threw, read from a V8 stack (the jit-runner's scripts, cs-js
 * bundles in their isolates): only the frames of the script's own files are
 * kept, their locations made relative to the app directory (or to the
 * bundle), so neither the runner's own code nor a path of the sandbox's file
 * system reaches the core. The text is the contract's `ErrorData.stack`
 * (src/contract/error-stack.ts).
 */
import { formatFrames, MAX_ERROR_MESSAGE_CHARS, neutralText, type ScriptFrame } from '../../contract/error-stack.js';

/** Where an execution's script lives, as its stack and messages name it. */
export interface ScriptPlace {
  /** The frames of the script's files in a thrown value's stack, as the contract's text; undefined when there are none. */
  stackOf(thrown: unknown): string | undefined;
  /** A script exception's message with the place's absolute paths made relative, without controls, bounded. */
  message(text: string): string;
}

/** `  at fn (location)` or `  at location`, V8's frame lines. */
const FRAME = /^\s*at (?:(.+?) \((.+)\)|(.+))$/;
/** `<where>:<line>:<column>`, the end of a location. */
const LOCATION = /^(.+):(\d+):(\d+)$/;

/**
 * A place whose files are named by one of `prefixes` in a stack (a file URL
 * and the directory's path, each ending in `/`; `cs-js:<sha>/` for a bundle).
 * Longest first: a prefix inside another never leaves part of the longer one.
 */
export function scriptPlace(prefixes: readonly string[]): ScriptPlace {
  const ordered = [...new Set(prefixes)].filter((prefix) => prefix.length > 1).sort((a, b) => b.length - a.length);
  const relative = (location: string): string | undefined => {
    const prefix = ordered.find((candidate) => location.startsWith(candidate));
    return prefix === undefined ? undefined : location.slice(prefix.length);
  };
  return {
    stackOf(thrown) {
      const raw = stackText(thrown);
      if (raw === undefined) return undefined;
      const frames: ScriptFrame[] = [];
      for (const line of raw.split('\n')) {
        const frame = FRAME.exec(line);
        if (frame === null) continue;
        const location = LOCATION.exec(frame[2] ?? frame[3] ?? '');
        if (location === null) continue;
        const file = relative(location[1]!);
        if (file === undefined || file === '') continue;
        const fn = frame[1]?.trim();
        frames.push({ ...(fn ? { fn: scrub(fn, ordered) } : {}), file: decoded(file), line: Number(location[2]), column: Number(location[3]) });
      }
      return formatFrames(frames);
    },
    message(text) {
      return neutralText(scrub(text.slice(0, MAX_ERROR_MESSAGE_CHARS * 4), ordered), MAX_ERROR_MESSAGE_CHARS);
    },
  };
}

/** A thrown value's own stack text; a getter that throws (a bundle's) is no stack. */
function stackText(thrown: unknown): string | undefined {
  if (typeof thrown !== 'object' || thrown === null) return undefined;
  try {
    const stack = (thrown as { stack?: unknown }).stack;
    // A stack longer than this holds far more than the frames kept: only its start is read.
    return typeof stack === 'string' ? stack.slice(0, 256 * 1024) : undefined;
  } catch {
    return undefined;
  }
}

function scrub(text: string, prefixes: readonly string[]): string {
  let out = text;
  for (const prefix of prefixes) out = out.split(prefix).join('');
  return out;
}

/** A file URL's path percent-decoded (`my%20script.js`); kept as it is when it is not valid encoding. */
function decoded(file: string): string {
  try {
    return decodeURIComponent(file);
  } catch {
    return file;
  }
}
