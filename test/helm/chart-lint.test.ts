/**
 * Third-party linters on the rendered chart, as CI runs them: kube-score (best practices)
 * and kubeconform (every object against the OpenAPI schemas of the Kubernetes release
 * the test cluster runs, and the project's CRDs), both built from Go modules by
 * scripts/chart-lint-env.sh. A kube-score finding must be gone or waived, with its
 * reason, in the table of charts/README.md, and every waiver there must still be
 * needed. The CRDs must accept every AppDefinition the core accepts, the examples
 * first: editors and offline validators read the same schema.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { renderCrdFiles } from '../../src/crds/crd-documents.js';
import { validateAppDefinition } from '../../src/apps/validation/validate-app-definition.js';
import { REPO_ROOT } from '../helpers/uhlp-process.js';
import { ALL_OPTIONS, CHART, helmOk } from './helm-env.js';
import { writeCrdSchemas, writeKubernetesSchemas } from './kubeconform-schemas.js';

const run = promisify(execFile);
const README = path.join(REPO_ROOT, 'charts', 'README.md');
/** prometheus-operator's kinds: their CRDs are not this project's, and no schema of them is on this machine. */
const MONITORING_KINDS = ['ServiceMonitor', 'PodMonitor', 'PrometheusRule'];

interface Linters {
  readonly kubeScore: string;
  readonly kubeconform: string;
  readonly kubernetesVersion: string;
  readonly openapi: string;
}

async function linters(): Promise<Linters> {
  const { stdout } = await run(path.join(REPO_ROOT, 'scripts', 'chart-lint-env.sh'), [], { maxBuffer: 1 << 20, timeout: 900_000 });
  const values = Object.fromEntries(stdout.trim().split('\n').map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]));
  for (const key of ['KUBE_SCORE', 'KUBECONFORM', 'KUBERNETES_VERSION', 'KUBERNETES_OPENAPI']) {
    if (!values[key]) throw new Error(`scripts/chart-lint-env.sh printed no ${key}= line: ${stdout}`);
  }
  return { kubeScore: values.KUBE_SCORE!, kubeconform: values.KUBECONFORM!, kubernetesVersion: values.KUBERNETES_VERSION!, openapi: values.KUBERNETES_OPENAPI! };
}

/** The kube-score flags of the waiver table in charts/README.md (its first column), with their reasons. */
function readmeWaivers(markdown: string): Array<{ flag: string; why: string }> {
  const section = /^### Waived kube-score findings\n([\s\S]*?)(?=^#{1,3} |(?![\s\S]))/m.exec(markdown)?.[1];
  if (section === undefined) throw new Error('charts/README.md has no "### Waived kube-score findings" section');
  return section
    .split('\n')
    .filter((line) => /^\| `--/.test(line))
    .map((line) => {
      const cells = line.split('|').map((cell) => cell.trim());
      return { flag: cells[1]!.replace(/`/g, ''), why: cells[3] ?? '' };
    });
}

interface Finding {
  readonly object: string;
  readonly check: string;
  readonly summary: string;
}

interface KubeScoreObject {
  object_name: string;
  checks: Array<{ check: { id: string }; grade: number; skipped: boolean; comments: Array<{ summary: string }> | null }>;
}

describe('kube-score and kubeconform on the rendered chart', () => {
  let tools: Linters;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-chart-lint-'));
  const schemas = path.join(dir, 'schemas');
  const renders: Record<'defaults' | 'bundledRedis' | 'everyOption', string> = { defaults: '', bundledRedis: '', everyOption: '' };

  beforeAll(async () => {
    tools = await linters();
    // The release's own schemas, and the CRDs as `npm run generate` writes them.
    expect(writeKubernetesSchemas(JSON.parse(readFileSync(tools.openapi, 'utf8')), schemas)).toBeGreaterThan(200);
    for (const text of renderCrdFiles().values()) writeCrdSchemas(parse(text), schemas);
    const render = async (name: keyof typeof renders, args: string[]): Promise<void> => {
      renders[name] = path.join(dir, `${name}.yaml`);
      writeFileSync(renders[name], await helmOk(['template', 'rel', CHART, '-n', 'uhlp-system', ...args]));
    };
    await render('defaults', []);
    await render('bundledRedis', ['--set', 'redis.bundled.enabled=true']);
    await render('everyOption', ['-f', ALL_OPTIONS]);
  }, 900_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const kubeScore = async (files: string[], flags: string[]): Promise<Finding[]> => {
    const args = ['score', ...files, '--output-format', 'json', '--kubernetes-version', tools.kubernetesVersion.replace(/\.\d+$/, ''), '--disable-ignore-checks-annotations', ...flags];
    // kube-score exits 1 when it finds something critical; its answer is on stdout either way.
    const { stdout } = await run(tools.kubeScore, args, { maxBuffer: 64 << 20 }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
    return (JSON.parse(stdout) as KubeScoreObject[]).flatMap((object) =>
      object.checks
        .filter((check) => check.grade < 10 && !check.skipped)
        .map((check) => ({ object: object.object_name, check: check.check.id, summary: (check.comments ?? []).map((comment) => comment.summary).join('; ') })),
    );
  };

  const kubeconform = async (files: string[], extra: string[] = []): Promise<{ code: number; output: string }> => {
    const args = ['-strict', '-summary', '-kubernetes-version', tools.kubernetesVersion.slice(1), '-schema-location', `${schemas}/{{ .ResourceKind }}{{ .KindSuffix }}.json`, ...extra, ...files];
    return run(tools.kubeconform, args, { maxBuffer: 16 << 20 }).then(
      ({ stdout }) => ({ code: 0, output: stdout }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? 1, output: `${error.stdout ?? ''}${error.stderr ?? ''}` }),
    );
  };

  it('finds nothing in the default values, nor with the bundled Redis, that charts/README.md does not waive', async () => {
    const waivers = readmeWaivers(readFileSync(README, 'utf8'));
    expect(waivers.length).toBeGreaterThan(0);
    for (const waiver of waivers) expect(waiver.why.length, `the reason of ${waiver.flag}`).toBeGreaterThan(40);
    expect(await kubeScore([renders.defaults, renders.bundledRedis], waivers.map((waiver) => waiver.flag))).toEqual([]);
  });

  it('needs every waiver of charts/README.md: without one, kube-score finds what it waives', async () => {
    const flags = readmeWaivers(readFileSync(README, 'utf8')).map((waiver) => waiver.flag);
    for (const flag of flags) {
      const found = await kubeScore([renders.defaults, renders.bundledRedis], flags.filter((other) => other !== flag));
      expect(found.length, `${flag} waives nothing`).toBeGreaterThan(0);
    }
  });

  it('finds what the chart used to get wrong, so the clean result above means something', async () => {
    const broken = path.join(dir, 'broken.yaml');
    // The findings of issue 30, put back: a `latest` tag, one probe for readiness and liveness, no NetworkPolicy.
    const manifest = readFileSync(renders.defaults, 'utf8')
      .replace(/image: uhlp\/uhlp:[^\s]+/g, 'image: uhlp/uhlp:latest')
      .replace('path: /readyz\n              port: metrics', 'path: /healthz\n              port: metrics')
      .split('\n---\n')
      .filter((document) => !document.includes('kind: NetworkPolicy'))
      .join('\n---\n');
    writeFileSync(broken, manifest);
    const checks = new Set((await kubeScore([broken], readmeWaivers(readFileSync(README, 'utf8')).map((waiver) => waiver.flag))).map((finding) => finding.check));
    expect([...checks].sort()).toEqual(['container-image-tag', 'pod-networkpolicy', 'pod-probes-identical']);
  });

  it('validates every rendered object against Kubernetes 1.34 and the CRDs, strictly', async () => {
    for (const file of [renders.defaults, renders.bundledRedis]) {
      const result = await kubeconform([file]);
      expect(result, result.output).toMatchObject({ code: 0 });
      expect(result.output).toMatch(/Invalid: 0, Errors: 0, Skipped: 0/);
    }
    // Every option: the prometheus-operator kinds are skipped by name, nothing else.
    const every = await kubeconform([renders.everyOption], ['-skip', MONITORING_KINDS.join(',')]);
    expect(every, every.output).toMatchObject({ code: 0 });
    expect(every.output).toMatch(new RegExp(`Invalid: 0, Errors: 0, Skipped: ${parseAllDocuments(readFileSync(renders.everyOption, 'utf8')).filter((d) => MONITORING_KINDS.includes((d.toJS() as { kind?: string } | null)?.kind ?? '')).length}\\b`));
  });

  it('refuses a misspelt field with kubeconform (the schemas are strict and found, not skipped)', async () => {
    const typo = path.join(dir, 'typo.yaml');
    writeFileSync(typo, readFileSync(renders.defaults, 'utf8').replace('readinessProbe:', 'readinesProbe:'));
    const result = await kubeconform([typo]);
    expect(result.code).not.toBe(0);
    expect(result.output).toMatch(/readinesProbe/);
  });

  it('accepts with the CRD schema every AppDefinition file the core accepts (the examples included)', async () => {
    const files = [
      ...readdirSync(path.join(REPO_ROOT, 'examples', 'apps')).map((app) => path.join(REPO_ROOT, 'examples', 'apps', app, 'app.yaml')),
      ...readdirSync(path.join(REPO_ROOT, 'test', 'fixtures'), { recursive: true, encoding: 'utf8' })
        .filter((file) => /(^|\/)apps\/[^/]+\/app\.yaml$/.test(file))
        .map((file) => path.join(REPO_ROOT, 'test', 'fixtures', file)),
    ];
    // The core's verdict on the document itself (script files are not the CRD's business).
    const accepted = files.filter((file) => validateAppDefinition(parse(readFileSync(file, 'utf8')), { file, appDirName: path.basename(path.dirname(file)), fileExists: () => true }).ok);
    expect(accepted.filter((file) => file.includes(`${path.sep}examples${path.sep}`)).length).toBe(readdirSync(path.join(REPO_ROOT, 'examples', 'apps')).length);
    expect(accepted.length).toBeGreaterThan(20);
    const result = await kubeconform(accepted);
    expect(result, result.output).toMatchObject({ code: 0 });
    expect(result.output).toContain(`Valid: ${accepted.length}, Invalid: 0, Errors: 0, Skipped: 0`);
  });
});
