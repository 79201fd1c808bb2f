import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as registry from './errors.js';
import { ERROR_CATALOG, errorStatus, InternalError, isErrorCode, UhlpError } from './errors.js';
import * as runnerErrors from './runner-errors.js';
import * as workflowErrors from './workflow-errors.js';

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
const documented = new Map<string, number>();
for (const match of doc.matchAll(/^\| `(UHLP_[A-Z_]+)` \| (\d{3}) \|/gm)) documented.set(match[1]!, Number(match[2]));

describe('docs/errors.md', () => {
  it('documents every code of the catalog with its status', () => {
    for (const [code, { status }] of Object.entries(ERROR_CATALOG)) {
      expect(documented.get(code), `docs/errors.md row for ${code}`).toBe(status);
    }
  });

  it('documents no code that the catalog lacks', () => {
    for (const code of documented.keys()) expect(Object.keys(ERROR_CATALOG)).toContain(code);
  });
});

type ErrorClass = new () => UhlpError;

/** Every error class the registry modules export (the base excepted). */
const classes = (Object.entries({ ...registry, ...runnerErrors, ...workflowErrors }) as Array<[string, unknown]>).filter(
  (entry): entry is [string, ErrorClass] => typeof entry[1] === 'function' && entry[1].prototype instanceof UhlpError,
);

describe('the error classes', () => {
  it('are the ones expected: a new class is added here on purpose', () => {
    expect(classes.length).toBe(32);
  });

  it.each(classes)('%s: a literal name, a registry code, its status from the registry and docs, a default message', (name, ErrorClass) => {
    const error = new ErrorClass();
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(UhlpError);
    expect(error.name).toBe(name);
    expect(isErrorCode(error.code)).toBe(true);
    expect(error.statusCode).toBe(ERROR_CATALOG[error.code].status);
    expect(error.status).toBe(error.statusCode);
    expect(documented.get(error.code)).toBe(error.statusCode);
    expect(error.message).not.toBe('');
    expect(error.details).toBeUndefined();
  });

  it('name each code once', () => {
    const codes = classes.map(([, ErrorClass]) => new ErrorClass().code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('keep the message and details they are given', () => {
    const error = new workflowErrors.WorkflowTimeoutError('the run ran past 50 ms', { timeoutMs: 50 });
    expect(error).toMatchObject({ name: 'WorkflowTimeoutError', code: 'UHLP_WORKFLOW_TIMEOUT', statusCode: 504, status: 504, message: 'the run ran past 50 ms', details: { timeoutMs: 50 } });
  });
});

describe('the registry', () => {
  it.each([
    ['UHLP_WORKFLOW_TIMEOUT', true],
    ['UHLP_NOT_A_CODE', false],
    ['toString', false],
    ['__proto__', false],
  ])('knows %s: %s', (code, known) => {
    expect(isErrorCode(code)).toBe(known);
  });

  it('gives each code the status of its catalog entry, the base class included', () => {
    for (const code of Object.keys(ERROR_CATALOG) as Array<keyof typeof ERROR_CATALOG>) {
      expect(errorStatus(code)).toBe(ERROR_CATALOG[code].status);
      expect(new UhlpError(code, 'm').statusCode).toBe(ERROR_CATALOG[code].status);
    }
    expect(new InternalError()).toMatchObject({ code: 'UHLP_INTERNAL', statusCode: 500 });
  });
});

/**
 * The source-level guard of the registry: a code written next to a status by hand
 * is a status the registry does not give. Those errors go through a class of the
 * registry (or `toRunError`, `errorResult`, `ToolCallError.of`) instead.
 */
describe('error statuses in the source', () => {
  const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const files = readdirSync(src, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => file !== fileURLToPath(new URL('./errors.ts', import.meta.url)));
  // A code, then (past template holes and one level of nested objects) a status number in the same object.
  const HAND_TYPED = /code:\s*'UHLP_[A-Z_]+'(?:[^{}]|\{[^{}]*\})*?\bstatus(?:Code)?:\s*\d{3}\b/g;

  it('finds sources to check', () => {
    expect(files.length).toBeGreaterThan(100);
  });

  it('has no code written with a status by hand', () => {
    const found = files.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(HAND_TYPED)].map((match) => `${path.relative(src, file)}: ${match[0].slice(0, 120)}`));
    expect(found).toEqual([]);
  });

  it('catches one', () => {
    expect("return { code: 'UHLP_WORKFLOW_TIMEOUT', message: `past ${ms} ms`, status: 504 };".match(HAND_TYPED)).toHaveLength(1);
    expect("throw new WorkflowTimeoutError(`past ${ms} ms`, { timeoutMs: ms });".match(HAND_TYPED)).toBeNull();
    expect("{ code: 'UHLP_X', details: { ms }, status: 500 }".match(HAND_TYPED)).toHaveLength(1);
    expect("{ code: 'UHLP_X', message: 'm' }; const y = { status: 500 };".match(HAND_TYPED)).toBeNull();
  });
});
