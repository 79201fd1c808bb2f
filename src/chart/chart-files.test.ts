import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ChartValues } from './chart-values-schema.js';
import { CHART_DIR, renderChartFiles } from './generate-chart.js';

// CI's guard that charts/uhlp holds what the schemas generate: edit the sources, then run `npm run generate`.
describe('charts/uhlp generated files', () => {
  const generated = renderChartFiles();

  for (const [file, text] of generated) {
    it(`${file} matches its source (run \`npm run generate\` when this fails)`, async () => {
      expect(await readFile(path.join(CHART_DIR, file), 'utf8')).toBe(text);
    });
  }

  it('values.yaml holds exactly the schema defaults, and they pass the schema', () => {
    const values = parse(generated.get('values.yaml')!) as unknown;
    expect(values).toEqual(Value.Create(ChartValues));
    expect([...Value.Errors(ChartValues, values)]).toEqual([]);
  });

  it('documents every key of values.yaml with a comment line above it', () => {
    const lines = generated.get('values.yaml')!.split('\n');
    lines.forEach((line, index) => {
      // A key line: `key:` at some indent, outside a default block (those are YAML of a pass-through value).
      if (/^( {2})*[A-Za-z][\w]*:/.test(line) && !/^\s*(requests|limits|cpu|memory):/.test(line)) {
        expect(lines[index - 1], `no comment above "${line.trim()}"`).toMatch(/^\s*#/);
      }
    });
  });

  it('closes every object of values.schema.json, so a misspelt key fails at install', () => {
    const schema = JSON.parse(generated.get('values.schema.json')!) as Record<string, unknown>;
    const open: string[] = [];
    const walk = (node: Record<string, unknown>, where: string): void => {
      if (node.type === 'object' && Object.keys((node.properties ?? {}) as object).length > 0 && node.additionalProperties !== false) open.push(where);
      for (const [key, child] of Object.entries((node.properties ?? {}) as Record<string, Record<string, unknown>>)) walk(child, `${where}.${key}`);
      if (node.items) walk(node.items as Record<string, unknown>, `${where}[]`);
    };
    walk(schema, '$');
    expect(open).toEqual([]);
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
  });

  it('refuses a misspelt key and a value of the wrong kind, naming the path', () => {
    const errors = (values: unknown): string[] => [...Value.Errors(ChartValues, values)].map((error) => `${error.path} ${error.message}`);
    const defaults = Value.Create(ChartValues) as { core: Record<string, unknown> };
    expect(errors({ ...defaults, core: { ...defaults.core, replicas: 2 } }).join('\n')).toMatch(/\/core/);
    expect(errors({ ...defaults, core: { ...defaults.core, replicaCount: 'two' } }).join('\n')).toMatch(/\/core\/replicaCount/);
  });

  it('gives the chart the package version as appVersion', async () => {
    const chart = parse(await readFile(path.join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { appVersion: string };
    const pkg = JSON.parse(await readFile(path.join(CHART_DIR, '..', '..', 'package.json'), 'utf8')) as { version: string };
    expect(chart.appVersion).toBe(pkg.version);
  });
});
