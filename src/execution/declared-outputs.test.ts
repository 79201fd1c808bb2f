import { describe, expect, it } from 'vitest';
import { declaredPathProblem, requestDeclaredOutputs } from './declared-outputs.js';

describe('declaredPathProblem', () => {
  it.each([
    ['output/report.json', undefined],
    ['tmp/**', undefined],
    ['output/{a,b}/*.json', undefined],
    ['data/x', /must start with tmp\/ or output\//],
    ['output/../x', /"\.\."/],
    ['output/{1..3}.json', /brace range/],
    ['output/+(a|b)', /groups and extglobs/],
    [`output/${'{a,b}'.repeat(7)}`, /more than 64 globs/],
  ])('%s -> %s', (declared, problem) => {
    const found = declaredPathProblem(declared);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toMatch(problem);
  });
});

describe('requestDeclaredOutputs', () => {
  it('refuses a header path that does not compile as a glob, naming the entry', () => {
    const header = JSON.stringify([{ path: 'tmp/**', role: 'scratch' }, { path: 'output/[!x].json', role: 'report' }]);
    expect(() => requestDeclaredOutputs(header)).toThrow(/entry 1: path "output\/\[!x\]\.json" holds a class starting "\[!"/);
  });
});
