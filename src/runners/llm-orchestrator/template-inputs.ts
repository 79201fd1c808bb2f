/**
 * What an LLM component's templates read of their variables: the inputs of its
 * (inputs, output) samples for the optimization oracle (docs/oracle.md). The
 * variables of a request hold far more than a template uses (every header,
 * the session, the whole request), and the same inputs must be recognised when
 * they come again, so a sample holds only what the render looked at.
 *
 * The tracker sees each render variable the template looks up
 * (withLookupObserver) and hands the template a read-only view of it that notes
 * every path read: a leaf (`body.text`) when a scalar is read, the object whole
 * when it is enumerated, stringified or dumped, an array whole whenever it is
 * touched. The runner reports the paths (`metrics.template_inputs`), never the
 * values: the core projects its own copy of the variables onto them, so a
 * sandbox can name what was read but cannot make up what it was.
 */
import { registerView } from './template-values.js';
import { MAX_INPUT_PATH_DEPTH, MAX_INPUT_PATHS, MAX_INPUT_SEGMENT_CHARS } from '../../contract/template-inputs.js';
import type { TemplateVariables } from '../../contract/template-variables.js';


/** Names whose lookup means the object is used whole (printed, dumped, compared). */
const WHOLE_USES: ReadonlySet<string | symbol> = new Set(['toString', 'valueOf', 'toJSON', Symbol.toPrimitive]);

export class TemplateInputs {
  /** Read paths, each as the JSON of its segments. */
  private readonly read = new Set<string>();

  constructor(private readonly variables: TemplateVariables) {}

  /** The lookup observer of a render (template-sandbox.ts). */
  readonly observe = (name: string, value: unknown): unknown => (Object.hasOwn(this.variables, name) ? this.view(value, [name]) : value);

  /** The paths read so far, shortest first: none under another, bounded (see the constants above). */
  paths(): string[][] {
    // Shorter first (so a path under a kept one is seen to be under it), then in a fixed order.
    const all = [...this.read].sort().map((json) => JSON.parse(json) as string[]).sort((a, b) => a.length - b.length);
    const kept: string[][] = [];
    for (const path of all) {
      if (!kept.some((shorter) => shorter.every((segment, i) => path[i] === segment))) kept.push(path);
    }
    if (kept.length <= MAX_INPUT_PATHS) return kept;
    return [...new Set(kept.map((path) => path[0]!))].map((name) => [name]);
  }

  private note(path: readonly string[]): void {
    this.read.add(JSON.stringify(path));
  }

  /** The value as the template gets it: scalars and arrays as they are (noted), objects as a noting view. */
  private view(value: unknown, path: readonly string[]): unknown {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || path.length >= MAX_INPUT_PATH_DEPTH) {
      this.note(path);
      return value;
    }
    const source = value as Record<string, unknown>;
    const whole = (): void => this.note(path);
    // The target is an empty, extensible object: the view may answer what it likes
    // without breaking a proxy invariant, and the frozen original is never handed out.
    const view = new Proxy(
      {},
      {
        get: (_target, key) => {
          if (WHOLE_USES.has(key)) {
            whole();
            return Reflect.get(source, key);
          }
          if (typeof key === 'symbol') return Reflect.get(source, key);
          // Inherited names (the methods of every object) are not data of the request.
          if (!Object.hasOwn(source, key) && key in source) return Reflect.get(source, key);
          if (key.length > MAX_INPUT_SEGMENT_CHARS) {
            whole();
            return source[key];
          }
          return this.view(source[key], [...path, key]);
        },
        has: (_target, key) => {
          if (typeof key === 'string' && key.length <= MAX_INPUT_SEGMENT_CHARS) this.note([...path, key]);
          else whole();
          return key in source;
        },
        ownKeys: () => {
          whole();
          return Reflect.ownKeys(source);
        },
        getOwnPropertyDescriptor: (_target, key) => {
          whole();
          const descriptor = Reflect.getOwnPropertyDescriptor(source, key);
          // Reported configurable: the empty target has no such property, and a proxy may not say otherwise.
          return descriptor === undefined ? undefined : { value: descriptor.value, writable: false, enumerable: descriptor.enumerable ?? true, configurable: true };
        },
        set: () => false,
        defineProperty: () => false,
        deleteProperty: () => false,
      },
    );
    // The sandbox's lookups ask the source what is own data, so asking does not read the object whole.
    registerView(view, source);
    return view;
  }
}
