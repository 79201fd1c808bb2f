/**
 * The generated files of charts/uhlp: values.yaml and values.schema.json (from the
 * values schema), the CRD templates (from the CRD generator), the alert rules and
 * the Grafana dashboard. `npm run generate` writes them; chart-files.test.ts and CI's
 * `git diff --exit-code -- crds charts` fail when a committed file differs.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderAlertRules } from './alert-rules.js';
import { ChartValues } from './chart-values-schema.js';
import { renderCrdTemplates } from './crd-templates.js';
import { buildDashboard } from './uhlp-dashboard.js';
import { renderValuesYaml } from './values-yaml.js';

/** charts/uhlp at the repository root. */
export const CHART_DIR = fileURLToPath(new URL('../../charts/uhlp/', import.meta.url));

/** values.schema.json: the schema without TypeBox's own symbols, closed at every level. */
export function renderValuesSchema(): string {
  const schema = { $schema: 'http://json-schema.org/draft-07/schema#', title: 'uhlp chart values', ...JSON.parse(JSON.stringify(ChartValues)) };
  return `${JSON.stringify(schema, null, 2)}\n`;
}

/** Every generated file, keyed by its path under the chart. */
export function renderChartFiles(): Map<string, string> {
  const files = new Map<string, string>([
    ['values.yaml', renderValuesYaml(JSON.parse(JSON.stringify(ChartValues)))],
    ['values.schema.json', renderValuesSchema()],
    ['files/alert-rules.yaml', renderAlertRules()],
    ['dashboards/uhlp.json', `${JSON.stringify(buildDashboard(), null, 2)}\n`],
  ]);
  for (const [file, text] of renderCrdTemplates()) files.set(file, text);
  return files;
}

export async function writeChartFiles(dir: string = CHART_DIR): Promise<string[]> {
  const written: string[] = [];
  for (const [file, text] of renderChartFiles()) {
    const target = path.join(dir, file);
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, text);
    written.push(target);
  }
  return written;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const file of await writeChartFiles()) console.log(`wrote ${file}`);
}
